import { useState } from 'preact/hooks'
import { useId } from '../ui'

export interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  enum?: unknown[]
  description?: string
  default?: unknown
  minimum?: number
  maximum?: number
  items?: JsonSchema
}

const kind = (schema: JsonSchema) => (Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type) ?? 'string'

/** Turns the form's strings into the values the schema asks for; a wrong one throws with its field's name. */
export function parseValues(schema: JsonSchema, raw: Record<string, string | boolean>): { values: Record<string, unknown>; errors: Record<string, string> } {
  const values: Record<string, unknown> = {}
  const errors: Record<string, string> = {}
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const value = raw[name]
    const required = schema.required?.includes(name) ?? false
    if (value === undefined || value === '') {
      if (required && kind(field) !== 'boolean') errors[name] = 'Required.'
      continue
    }
    const type = kind(field)
    if (type === 'boolean') values[name] = value === true
    else if (type === 'number' || type === 'integer') {
      const number = Number(value)
      if (!Number.isFinite(number) || (type === 'integer' && !Number.isInteger(number))) errors[name] = type === 'integer' ? 'A whole number is expected.' : 'A number is expected.'
      else values[name] = number
    } else if (type === 'object' || type === 'array') {
      try {
        values[name] = JSON.parse(String(value))
      } catch {
        errors[name] = `JSON ${type === 'array' ? 'array' : 'object'} expected.`
      }
    } else values[name] = value
  }
  return { values, errors }
}

/** A form built from an action's JSON schema: one labelled control per property. */
export function SchemaFields({ schema, values, errors, onChange }: { schema: JsonSchema; values: Record<string, string | boolean>; errors: Record<string, string>; onChange: (name: string, value: string | boolean) => void }) {
  const prefix = useId('p')
  return (
    <>
      {Object.entries(schema.properties ?? {}).map(([name, field]) => {
        const id = `${prefix}-${name}`
        const type = kind(field)
        const required = schema.required?.includes(name) ?? false
        const label = `${name}${required ? ' (required)' : ''}`
        const describedBy = `${id}-d ${id}-e`
        const control =
          type === 'boolean' ? (
            <label class="check">
              <input id={id} type="checkbox" checked={values[name] === true} onChange={(e) => onChange(name, e.currentTarget.checked)} aria-describedby={describedBy} /> {label}
            </label>
          ) : field.enum ? (
            <select id={id} value={String(values[name] ?? '')} onChange={(e) => onChange(name, e.currentTarget.value)} aria-describedby={describedBy}>
              <option value="">—</option>
              {field.enum.map((option) => (
                <option value={String(option)}>{String(option)}</option>
              ))}
            </select>
          ) : type === 'object' || type === 'array' ? (
            <textarea id={id} rows={3} placeholder={type === 'array' ? '[ ]' : '{ }'} value={String(values[name] ?? '')} onInput={(e) => onChange(name, e.currentTarget.value)} aria-describedby={describedBy} />
          ) : (
            <input
              id={id}
              type={type === 'number' || type === 'integer' ? 'number' : 'text'}
              step={type === 'integer' ? 1 : 'any'}
              min={field.minimum}
              max={field.maximum}
              value={String(values[name] ?? '')}
              onInput={(e) => onChange(name, e.currentTarget.value)}
              aria-invalid={errors[name] ? true : undefined}
              aria-describedby={describedBy}
            />
          )
        return (
          <div key={name}>
            {type !== 'boolean' && <label for={id}>{label}</label>}
            {control}
            <p class="muted small" id={`${id}-d`}>
              {field.description}
            </p>
            {errors[name] && (
              <p class="error" role="alert" id={`${id}-e`}>
                {errors[name]}
              </p>
            )}
          </div>
        )
      })}
    </>
  )
}

export function useSchemaForm() {
  const [values, setValues] = useState<Record<string, string | boolean>>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  return { values, errors, setErrors, setValues, onChange: (name: string, value: string | boolean) => setValues((v) => ({ ...v, [name]: value })) }
}
