import { expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { extractTgz, packTgz } from '../../../src/modules/plugins/tar'
import { tempDir } from '../../helpers'

test('packTgz: a plugin folder (nested folders, long and non-ASCII names, symlinks) unpacks as it was, and the same folder packs to the same bytes', () => {
  const source = tempDir('pack-source')
  const long = `${'d'.repeat(90)}/${'é'.repeat(60)}.js`
  mkdirSync(join(source, 'node_modules', '.bin'), { recursive: true })
  mkdirSync(join(source, 'node_modules', 'dep', 'lib'), { recursive: true })
  mkdirSync(join(source, 'd'.repeat(90)))
  mkdirSync(join(source, 'empty'))
  writeFileSync(join(source, 'plugin.json'), '{"name":"packed"}')
  writeFileSync(join(source, 'node_modules', 'dep', 'lib', 'cli.js'), 'x'.repeat(1500))
  writeFileSync(join(source, long), 'long name')
  symlinkSync('../dep/lib/cli.js', join(source, 'node_modules', '.bin', 'dep'))
  symlinkSync(`../${long}`, join(source, 'node_modules', 'long-link'))

  const packed = packTgz(source)
  const target = tempDir('pack-target')
  extractTgz(packed, target)
  expect(readdirSync(target).sort()).toEqual(['d'.repeat(90), 'empty', 'node_modules', 'plugin.json'])
  expect(readFileSync(join(target, 'plugin.json'), 'utf8')).toBe('{"name":"packed"}')
  expect(readFileSync(join(target, long), 'utf8')).toBe('long name')
  expect(readlinkSync(join(target, 'node_modules', '.bin', 'dep'))).toBe('../dep/lib/cli.js')
  expect(readFileSync(join(target, 'node_modules', '.bin', 'dep'), 'utf8')).toBe('x'.repeat(1500))
  expect(readlinkSync(join(target, 'node_modules', 'long-link'))).toBe(`../${long}`)
  expect(readdirSync(join(target, 'empty'))).toEqual([])

  const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
  expect(sha(packTgz(source))).toBe(sha(packed))
  expect(sha(packTgz(target))).toBe(sha(packed))
  writeFileSync(join(target, 'plugin.json'), '{"name":"changed"}')
  expect(sha(packTgz(target))).not.toBe(sha(packed))
})
