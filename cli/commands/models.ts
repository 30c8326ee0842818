import type { Command } from 'commander'
import { loadConfig } from '../../src/config'
import { listModels, pullModel, PullError } from '../../src/ml/pull'
import { CliError, EXIT } from '../client'
import { dim, emit, example, keyValues, table } from '../output'

function modelsConfig(dir?: string) {
  const config = loadConfig()
  return { ...config, modelsDir: dir ?? config.modelsDir }
}

export function registerModels(program: Command): void {
  const models = program.command('models').description('Local model weights (read from UAGENT_MODELS_DIR)')
  example(
    models
      .command('list')
      .description('Installed models and the engines the server would use')
      .option('--dir <path>', 'models directory (default UAGENT_MODELS_DIR or ./models)')
      .action((options: { dir?: string }, command: Command) => {
        const result = listModels(modelsConfig(options.dir))
        emit(command, result, () => {
          console.log(keyValues([['directory', result.modelsDir], ['embedder', result.active.embedderId], ['generator', result.active.generatorId]]))
          console.log()
          if (!result.models.length) console.log(dim('No models installed; the built-in engines are used (see models/README.md).'))
          else
            console.log(
              table(['MODEL', 'KIND', 'SIZE', 'QUANTIZED', 'ACTIVE'], result.models.map((m) => [m.id, m.kind, `${(m.sizeBytes / 1024 / 1024).toFixed(1)} MB`, m.quantized ? 'yes' : 'no', m.active ?? ''])),
            )
        })
      }),
    'uagent models list',
  )
  example(
    models
      .command('pull <id>')
      .description('Download a model (config, tokenizer, ONNX weights) into the models directory')
      .option('--endpoint <url>', 'hub base URL (default HF_ENDPOINT or https://huggingface.co)')
      .option('--dir <path>', 'models directory (default UAGENT_MODELS_DIR or ./models)')
      .option('--file <path...>', 'fetch exactly these files instead of the default set')
      .action(async (id: string, options: { endpoint?: string; dir?: string; file?: string[] }, command: Command) => {
        const config = modelsConfig(options.dir)
        const live = process.stderr.isTTY === true
        let current = ''
        try {
          const result = await pullModel({
            id,
            modelsDir: config.modelsDir,
            endpoint: options.endpoint,
            files: options.file,
            onProgress: ({ file, received, total }) => {
              if (!live) {
                if (file !== current) process.stderr.write(`fetching ${file}\n`)
              } else process.stderr.write(`\r${file} ${(received / 1024 / 1024).toFixed(1)}${total ? ` / ${(total / 1024 / 1024).toFixed(1)}` : ''} MB   `)
              current = file
            },
          })
          if (live) process.stderr.write('\n')
          emit(command, result, () => console.log(`Pulled ${result.id} into ${result.dir} (${result.files.join(', ')}).`))
        } catch (error) {
          if (error instanceof PullError) throw new CliError('PULL_FAILED', error.message, EXIT.apiError)
          throw error
        }
      }),
    'uagent models pull Xenova/all-MiniLM-L6-v2',
    'HF_ENDPOINT=http://mirror.local uagent models pull HuggingFaceTB/SmolLM2-135M-Instruct',
  )
}
