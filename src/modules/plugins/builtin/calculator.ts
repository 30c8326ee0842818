/**
 * Arithmetic expressions, parsed by recursive descent and evaluated as they are parsed; no
 * `eval`, no `Function`, no property access: the only names are the constants and functions
 * below. Nesting is bounded, so 1,000 parentheses are a clear error, not a stack overflow.
 *
 *   expression := term (('+' | '-') term)*
 *   term       := unary (('*' | '/' | '%') unary)*
 *   unary      := ('-' | '+') unary | power
 *   power      := postfix ('^' unary)?          (right-associative: 2^3^2 = 2^9; -2^2 = -4)
 *   postfix    := primary '!'*
 *   primary    := number | constant | name '(' arguments ')' | '(' expression ')'
 */

export class CalculatorError extends Error {}

export const MAX_EXPRESSION_LENGTH = 10_000
export const MAX_NESTING = 100

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI }

type Fn = { arity: [number, number]; apply: (...args: number[]) => number }

function round(x: number, digits = 0): number {
  if (!Number.isInteger(digits) || digits < 0 || digits > 15) throw new CalculatorError('round: digits must be a whole number from 0 to 15')
  const factor = 10 ** digits
  return Math.round((x + Math.sign(x) * Number.EPSILON) * factor) / factor
}

function factorial(n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new CalculatorError('factorial: needs a whole number of at least 0')
  if (n > 170) throw new CalculatorError('factorial: the result is too large (n must be at most 170)')
  let result = 1
  for (let i = 2; i <= n; i++) result *= i
  return result
}

const FUNCTIONS: Record<string, Fn> = {
  sqrt: { arity: [1, 1], apply: Math.sqrt },
  cbrt: { arity: [1, 1], apply: Math.cbrt },
  abs: { arity: [1, 1], apply: Math.abs },
  round: { arity: [1, 2], apply: round },
  floor: { arity: [1, 1], apply: Math.floor },
  ceil: { arity: [1, 1], apply: Math.ceil },
  trunc: { arity: [1, 1], apply: Math.trunc },
  sign: { arity: [1, 1], apply: Math.sign },
  exp: { arity: [1, 1], apply: Math.exp },
  ln: { arity: [1, 1], apply: Math.log },
  log: { arity: [1, 2], apply: (x, base) => (base === undefined ? Math.log10(x) : Math.log(x) / Math.log(base)) },
  log2: { arity: [1, 1], apply: Math.log2 },
  log10: { arity: [1, 1], apply: Math.log10 },
  sin: { arity: [1, 1], apply: Math.sin },
  cos: { arity: [1, 1], apply: Math.cos },
  tan: { arity: [1, 1], apply: Math.tan },
  asin: { arity: [1, 1], apply: Math.asin },
  acos: { arity: [1, 1], apply: Math.acos },
  atan: { arity: [1, 1], apply: Math.atan },
  atan2: { arity: [2, 2], apply: Math.atan2 },
  pow: { arity: [2, 2], apply: Math.pow },
  hypot: { arity: [1, 16], apply: Math.hypot },
  min: { arity: [1, 64], apply: Math.min },
  max: { arity: [1, 64], apply: Math.max },
  factorial: { arity: [1, 1], apply: factorial },
}

export const CALCULATOR_FUNCTIONS = Object.keys(FUNCTIONS)
export const CALCULATOR_CONSTANTS = Object.keys(CONSTANTS)

class Parser {
  private position = 0
  private depth = 0

  constructor(private readonly source: string) {}

  parse(): number {
    this.skipSpace()
    if (this.position >= this.source.length) throw new CalculatorError('The expression is empty')
    const value = this.expression()
    this.skipSpace()
    if (this.position < this.source.length) this.unexpected()
    return value
  }

  private skipSpace() {
    while (this.position < this.source.length && /\s/.test(this.source[this.position]!)) this.position++
  }

  private peek(): string {
    this.skipSpace()
    return this.source[this.position] ?? ''
  }

  private unexpected(): never {
    if (this.position >= this.source.length) throw new CalculatorError('The expression ends too early')
    const character = String.fromCodePoint(this.source.codePointAt(this.position)!)
    throw new CalculatorError(`Unexpected "${character}" at position ${this.position + 1}`)
  }

  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_NESTING) throw new CalculatorError(`The expression nests deeper than ${MAX_NESTING} levels`)
    try {
      return parse()
    } finally {
      this.depth--
    }
  }

  private expression(): number {
    return this.nested(() => {
      let value = this.term()
      for (let op = this.peek(); op === '+' || op === '-'; op = this.peek()) {
        this.position++
        const right = this.term()
        value = op === '+' ? value + right : value - right
      }
      return value
    })
  }

  private term(): number {
    let value = this.unary()
    for (let op = this.peek(); op === '*' || op === '/' || op === '%'; op = this.peek()) {
      this.position++
      const right = this.unary()
      if (op === '*') value *= right
      else if (right === 0) throw new CalculatorError(op === '/' ? 'Division by zero' : 'Remainder of a division by zero')
      else value = op === '/' ? value / right : value % right
    }
    return value
  }

  private unary(): number {
    const op = this.peek()
    if (op === '-' || op === '+') {
      this.position++
      return this.nested(() => (op === '-' ? -this.unary() : this.unary()))
    }
    return this.power()
  }

  private power(): number {
    const base = this.postfix()
    if (this.peek() !== '^') return base
    this.position++
    const exponent = this.nested(() => this.unary())
    return base ** exponent
  }

  private postfix(): number {
    let value = this.primary()
    while (this.peek() === '!') {
      this.position++
      value = factorial(value)
    }
    return value
  }

  private primary(): number {
    const next = this.peek()
    if (next === '(') {
      this.position++
      const value = this.expression()
      if (this.peek() !== ')') this.peek() === '' ? this.missingParenthesis() : this.unexpected()
      this.position++
      return value
    }
    const number = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.source.slice(this.position, this.position + 400))
    if (number) {
      this.position += number[0].length
      return Number(number[0])
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.source.slice(this.position, this.position + 64))
    if (name) return this.named(name[0])
    return this.unexpected()
  }

  private missingParenthesis(): never {
    throw new CalculatorError('A "(" is never closed')
  }

  private named(word: string): number {
    const start = this.position
    this.position += word.length
    const lower = word.toLowerCase()
    if (this.peek() === '(') {
      const fn = Object.hasOwn(FUNCTIONS, lower) ? FUNCTIONS[lower]! : undefined
      if (!fn) throw new CalculatorError(`Unknown function "${word}" at position ${start + 1}; known: ${CALCULATOR_FUNCTIONS.join(', ')}`)
      this.position++
      const args: number[] = []
      if (this.peek() !== ')') {
        args.push(this.expression())
        while (this.peek() === ',') {
          this.position++
          args.push(this.expression())
        }
      }
      if (this.peek() !== ')') this.peek() === '' ? this.missingParenthesis() : this.unexpected()
      this.position++
      const [least, most] = fn.arity
      if (args.length < least || args.length > most) {
        const expected = least === most ? `${least}` : `${least} to ${most}`
        throw new CalculatorError(`${lower} takes ${expected} argument${most === 1 ? '' : 's'}, got ${args.length}`)
      }
      return fn.apply(...args)
    }
    if (Object.hasOwn(CONSTANTS, lower)) return CONSTANTS[lower]!
    throw new CalculatorError(`Unknown name "${word}" at position ${start + 1}; constants are ${CALCULATOR_CONSTANTS.join(', ')}`)
  }
}

/** The value of an arithmetic expression; throws CalculatorError saying what is wrong with it. */
export function evaluateExpression(expression: string): number {
  if (expression.length > MAX_EXPRESSION_LENGTH) throw new CalculatorError(`The expression is longer than ${MAX_EXPRESSION_LENGTH} characters`)
  const value = new Parser(expression).parse()
  if (Number.isNaN(value)) throw new CalculatorError('The result is not a number (e.g. the square root of a negative number)')
  if (!Number.isFinite(value)) throw new CalculatorError('The result is too large to represent')
  return Object.is(value, -0) ? 0 : value
}
