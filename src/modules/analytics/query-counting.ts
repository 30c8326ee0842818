import { Elysia } from 'elysia'
import { type Handler, wrapHandlers } from '../../core/wrap-handlers'
import { countingQueries, type RequestQueries } from '../../db/postgres-pool'
import type { PrometheusMetrics } from './prometheus'
import type { RouteTable } from './route-table'

/**
 * On PostgreSQL: counts the queries each request makes until its response is handed over
 * (uagent_db_queries_per_request, by route pattern). The handler runs with a count of its own
 * (AsyncLocalStorage), which the measured pool (src/db/postgres-pool.ts) adds to. A response
 * streamed afterwards (server-sent events) counts only what was queried before it started.
 */
export function queryCounting(prometheus: PrometheusMetrics, routes: RouteTable) {
  const plugin = new Elysia({ name: 'analytics:query-counting' })
  const wrap = (handle: Handler): Handler => {
    return (request: Request): unknown => {
      const counter: RequestQueries = { count: 0 }
      const done = () => prometheus.requestQueried(request.method, routes.resolveUrl(request.method, request.url), counter.count)
      let result: unknown
      try {
        result = countingQueries(counter, () => handle(request))
      } catch (error) {
        done()
        throw error
      }
      if (result instanceof Promise && Bun.peek.status(result) === 'pending') {
        return result.then(
          (response) => {
            done()
            return response
          },
          (error) => {
            done()
            throw error
          },
        )
      }
      done()
      return result
    }
  }
  return wrapHandlers(plugin, 'query counted', wrap)
}
