import './styles.css'
import 'uplot/dist/uPlot.min.css'
import { signal } from '@preact/signals'
import { render } from 'preact'
import { lazy, Suspense } from 'preact/compat'
import { currentUser, isAdmin, resume, signOut } from './api'
import { LoginPage } from './pages/login'
import { ChatPage } from './pages/chat'
import { navigate, onLinkClick, route } from './router'

const KnowledgePage = lazy(() => import('./pages/knowledge').then((m) => m.KnowledgePage))
const AgentsPage = lazy(() => import('./pages/agents').then((m) => m.AgentsPage))
const AssistantsPage = lazy(() => import('./pages/assistants').then((m) => m.AssistantsPage))
const VoicePage = lazy(() => import('./pages/voice').then((m) => m.VoicePage))
const PluginsPage = lazy(() => import('./pages/plugins').then((m) => m.PluginsPage))
const AnalyticsPage = lazy(() => import('./pages/analytics').then((m) => m.AnalyticsPage))
const AdminPage = lazy(() => import('./pages/admin').then((m) => m.AdminPage))
const GroupsPage = lazy(() => import('./pages/groups').then((m) => m.GroupsPage))
const AuditPage = lazy(() => import('./pages/audit').then((m) => m.AuditPage))
const AccountPage = lazy(() => import('./pages/account').then((m) => m.AccountPage))
const DevicePage = lazy(() => import('./pages/device').then((m) => m.DevicePage))

const started = signal(false)

const PAGES = [
  { path: '/chat', label: 'Chat' },
  { path: '/knowledge', label: 'Knowledge base' },
  { path: '/assistants', label: 'Assistants' },
  { path: '/agents', label: 'Agents' },
  { path: '/voice', label: 'Voice' },
  { path: '/plugins', label: 'Plugins' },
  { path: '/analytics', label: 'Analytics', admin: true },
  { path: '/groups', label: 'Groups' },
  { path: '/admin', label: 'Administration' },
  { path: '/audit', label: 'Audit log', admin: true },
  { path: '/account', label: 'Account' },
]

function Page({ path }: { path: string }) {
  if (path.startsWith('/chat')) return <ChatPage conversationId={path.split('/')[2] ?? null} />
  // A conversation's link (as shared: /app/c/<id>).
  if (path.startsWith('/c/')) return <ChatPage conversationId={path.split('/')[2] || null} />
  if (path === '/knowledge') return <KnowledgePage />
  if (path === '/agents') return <AgentsPage />
  if (path === '/assistants') return <AssistantsPage />
  if (path === '/voice') return <VoicePage />
  if (path === '/plugins') return <PluginsPage />
  if (path === '/analytics') return <AnalyticsPage />
  if (path === '/groups') return <GroupsPage />
  if (path === '/admin') return <AdminPage />
  if (path === '/audit') return <AuditPage />
  if (path === '/account') return <AccountPage />
  if (path === '/device') return <DevicePage />
  return (
    <div class="card">
      <h1>Not found</h1>
      <p>There is no page at /app{path}.</p>
    </div>
  )
}

function App() {
  const user = currentUser.value
  if (!started.value) return null
  if (!user) return <LoginPage />
  let path = route.value
  if (path === '/' || path === '') {
    queueMicrotask(() => navigate('/chat'))
    return null
  }
  const section = `/${path.split('/')[1]}`
  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <nav class="nav" aria-label="Main">
        <div class="brand">
          <img src="/app/assets/icon.svg" alt="" />
          <span>Universal Agent</span>
        </div>
        {PAGES.filter((page) => !page.admin || isAdmin()).map((page) => (
          <a href={`/app${page.path}`} aria-current={section === page.path ? 'page' : undefined}>
            {page.label}
          </a>
        ))}
        <div class="who">
          <div>{user.email}</div>
          <button class="link" type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </nav>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p class="muted">Loading…</p>}>
          <Page path={path} />
        </Suspense>
      </main>
    </div>
  )
}

render(<App />, document.getElementById('app')!)
void resume().finally(() => {
  started.value = true
  // Read by `bun run bench web`: the first frame painted with the app usable.
  requestAnimationFrame(() => performance.mark('ua:interactive'))
})
