// Builds test/fixtures/answers-labelled.json: real documents from this Debian machine (licence
// texts, package documentation, manual pages) and questions written for them, each labelled with
// the sentence that answers it (a distinctive piece of it, as it stands in the document). Run once
// where the documents are installed; the fixture is committed so that tests and the bench do not
// depend on what a machine has installed. `bun scripts/make-answers-set.ts`
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'

const read = (path: string) => (path.endsWith('.gz') ? gunzipSync(readFileSync(path)).toString('utf8') : readFileSync(path, 'utf8'))
/** A manual page as plain text: long lines (one paragraph each), no overstrikes, no header and footer lines. */
function manPage(name: string): string {
  const out = Bun.spawnSync(['sh', '-c', `MANWIDTH=400 man -P cat ${name} | col -bx`], { stderr: 'ignore' }).stdout.toString()
  const lines = out.split('\n').map((line) => line.trimEnd())
  return lines.slice(1, -2).join('\n').replace(/‐\n\s*/g, '').trim()
}

const SOURCES: Record<string, { title: string; text: () => string }> = {
  'Apache-2.0': { title: 'Apache License 2.0', text: () => read('/usr/share/common-licenses/Apache-2.0') },
  'GPL-3': { title: 'GNU General Public License v3', text: () => read('/usr/share/common-licenses/GPL-3') },
  'MPL-2.0': { title: 'Mozilla Public License 2.0', text: () => read('/usr/share/common-licenses/MPL-2.0') },
  'users-and-groups': { title: 'Users and Groups in the Debian System', text: () => read('/usr/share/doc/base-passwd/users-and-groups.txt.gz') },
  'openssh-README.Debian': { title: 'OpenSSH for Debian', text: () => read('/usr/share/doc/openssh-client/README.Debian.gz') },
  'rootless-builds': { title: 'Supporting rootless builds', text: () => read('/usr/share/doc/dpkg/spec/rootless-builds.txt') },
  'gzip.1': { title: 'gzip(1)', text: () => manPage('gzip') },
  'adduser.conf.5': { title: 'adduser.conf(5)', text: () => manPage('5 adduser.conf') },
}

/** [document, question, a distinctive piece of the answering sentence]. */
const QUESTIONS: [string, string, string][] = [
  ['Apache-2.0', 'Can I sublicense the work?', 'publicly display, publicly perform, sublicense'],
  ['Apache-2.0', 'What happens to my patent licenses if I start patent litigation?', 'shall terminate as of the date such litigation is filed'],
  ['Apache-2.0', 'What must modified files carry?', 'carry prominent notices stating that You changed the files'],
  ['Apache-2.0', 'Am I allowed to use the trademarks of the Licensor?', 'does not grant permission to use the trade names'],
  ['Apache-2.0', 'Under which terms is a contribution I submit for inclusion licensed?', 'intentionally submitted for inclusion in the Work by You to the Licensor shall be'],
  ['Apache-2.0', 'How do I apply the Apache License to my own work?', 'attach the following boilerplate notice'],
  ['Apache-2.0', 'Is the work provided with any warranty?', 'on an "AS IS" BASIS'],
  ['Apache-2.0', 'Can I offer support or warranty for a fee when I redistribute?', 'You may choose to offer, and charge a fee for, acceptance of support'],
  ['GPL-3', 'Is sublicensing allowed?', 'Sublicensing is not allowed'],
  ['GPL-3', 'Can I charge money for copies I convey?', 'You may charge any price or no price for each copy that you convey'],
  ['GPL-3', 'What is the source code for a work?', 'preferred form of the work for making modifications to it'],
  ['GPL-3', 'Do I have to accept this license to run a copy of the program?', 'You are not required to accept this License in order to receive or run a copy'],
  ['GPL-3', 'Which version of the license applies when the program does not specify one?', 'you may choose any version ever published by the Free Software Foundation'],
  ['GPL-3', 'What is a User Product?', 'A "User Product" is either'],
  ['GPL-3', 'May I change the text of the license document?', 'changing it is not allowed'],
  ['GPL-3', 'Why do the developers use the GPL to protect your rights?', 'Developers that use the GNU GPL protect your rights with two steps'],
  ['MPL-2.0', 'Can I distribute the executable form under a different license?', 'or sublicense it under different terms'],
  ['MPL-2.0', 'May I remove copyright notices from the source code form?', 'You may not remove or alter the substance of any license notices'],
  ['MPL-2.0', 'When do my rights terminate?', 'will terminate automatically if You fail to comply with any of its terms'],
  ['MPL-2.0', 'What must I do if a statute makes it impossible to comply with the license?', 'comply with the terms of this License to the maximum extent possible'],
  ['MPL-2.0', 'Where must the description of those limitations be placed?', 'Such description must be placed in a text file included with all distributions'],
  ['MPL-2.0', 'Can I create a larger work under terms of my choice?', 'You may create and distribute a Larger Work under terms of Your choice'],
  ['users-and-groups', 'Who must allocate the global static ids?', 'must be allocated by the base-passwd maintainer on request'],
  ['users-and-groups', 'Which tool keeps the master passwd and group files in sync?', 'The update-passwd tool keeps the entries in these master files in sync'],
  ['users-and-groups', 'Where are the mailboxes that group mail owns?', 'Mailboxes in /var/mail are owned and writable by group mail'],
  ['users-and-groups', 'Why should web content not be owned by www-data?', 'or a compromised web server would be able to rewrite a web site'],
  ['users-and-groups', 'What uid did the operator account have?', 'It had uid 37'],
  ['users-and-groups', 'What can members of the adm group do?', 'can read many log files in /var/log'],
  ['users-and-groups', 'Which tools does being in group dip let you use?', 'allows you to use tools such as pppd, pon, and poff'],
  ['users-and-groups', 'What happens to root access over NFS with root-squashing?', 'root access from the client is performed as user nobody on the server'],
  ['openssh-README.Debian', 'What is PermitRootLogin set to on new installations?', 'new installations will be set to "PermitRootLogin'],
  ['openssh-README.Debian', 'How do I change PermitRootLogin on an upgraded system?', 'you should edit /etc/ssh/sshd_config, change it manually'],
  ['openssh-README.Debian', 'Why is ForwardX11 off by default?', 'logging into remote systems administered by'],
  ['openssh-README.Debian', 'What do I need to install on the server for X11 forwarding to work?', 'you need to install xauth on the'],
  ['openssh-README.Debian', 'How do I fix trouble logging in with RSA authentication?', 'make your home directory writable only by yourself'],
  ['openssh-README.Debian', 'Which files should I check if TCP wrappers block ssh logins?', 'please check that /etc/hosts.allow and /etc/hosts.deny'],
  ['openssh-README.Debian', 'What should I run after logging in when Kerberos support breaks?', 'you may need to run kinit after logging in'],
  ['openssh-README.Debian', 'How do I make systemd listen on port 22 and start sshd on connection?', 'then you can run:'],
  ['rootless-builds', 'Which field is added to the Source stanza of debian/control?', 'We add a new field to the "Source" stanza of debian/control'],
  ['rootless-builds', 'Which environment variable tells the rules file that the builder supports this?', 'via the "DEB_RULES_REQUIRES_ROOT" environment variable'],
  ['rootless-builds', 'Is a builder allowed to ignore the field?', 'It is always permissible for a builder to ignore this field'],
  ['rootless-builds', 'Can the field change the content of the package?', 'The value of this field MUST NOT change the content of the package'],
  ['rootless-builds', 'What should tools do with unknown keywords outside their namespace?', 'Tools MUST gracefully ignore valid unknown keywords outside their namespace'],
  ['gzip.1', 'How much is English text reduced by gzip?', 'is reduced by 60-70%'],
  ['gzip.1', 'How do I decompress a file?', 'Compressed files can be restored to their original form using gzip -d'],
  ['gzip.1', 'What is the default compression level?', 'The default compression level is -6'],
  ['gzip.1', 'What exit status does gzip return on a warning?', 'If a warning occurs, exit status is 2'],
  ['gzip.1', 'Where should I report bugs in gzip?', 'Report bugs to: bug-gzip@gnu.org'],
  ['gzip.1', 'How do I keep the input files during compression?', 'Keep (don\'t delete) input files during compression or decompression'],
  ['gzip.1', 'Does gzip compress symbolic links?', 'it will ignore symbolic links'],
  ['adduser.conf.5', 'What is the default login shell for new users?', 'The login shell to be used for all new users'],
  ['adduser.conf.5', 'Where are new home directories created?', 'The directory in which new home directories should be created'],
  ['adduser.conf.5', 'What permissions mode do home directories of system users get?', 'Defaults to 0755'],
  ['adduser.conf.5', 'From which directory are skeletal configuration files copied?', 'The directory from which skeletal user configuration files will be copied'],
  ['adduser.conf.5', 'How are comment lines marked in adduser.conf?', 'Comment lines must have a hash sign (#) in the first column'],
  ['adduser.conf.5', 'Which characters may a name not start with?', 'The name may not start with a dash or @'],
]

const squash = (text: string) => text.replace(/\s+/g, ' ')
const documents = Object.entries(SOURCES).map(([id, source]) => ({ id, metadata: { title: source.title }, content: source.text() }))
const questions = QUESTIONS.map(([document, question, answer]) => {
  const content = documents.find((d) => d.id === document)?.content
  if (!content) throw new Error(`unknown document ${document}`)
  if (!squash(content).includes(squash(answer))) throw new Error(`"${answer}" is not in ${document}`)
  return { question, document, answer }
})
const out = join(import.meta.dir, '../test/fixtures/answers-labelled.json')
const about =
  'Real documents of a Debian system (licence texts, package documentation, manual pages) and questions written for them, each labelled with ' +
  'a distinctive piece of the sentence that answers it. Made by scripts/make-answers-set.ts; measured by `bun run bench answers` (sentence-hit@1).'
writeFileSync(out, `${JSON.stringify({ about, documents, questions }, null, 1)}\n`)
console.log(`${questions.length} questions over ${documents.length} documents (${existsSync(out) ? readFileSync(out).length : 0} bytes) → ${out}`)
