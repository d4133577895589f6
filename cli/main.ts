import { parseArgs } from 'node:util';
import { HefestoApiError, type Problem } from '../shared/client/errors.js';
import { HefestoError } from '../shared/domain/errors.js';
import type { Command, Options, Values } from './command.js';
import { audit } from './commands/audit.js';
import { compact } from './commands/compact.js';
import { eventsTail } from './commands/events.js';
import { exportStream } from './commands/export.js';
import { importFile } from './commands/import.js';
import { keysCreate, keysRevoke, keysRotateSigning } from './commands/keys.js';
import { repair } from './commands/repair.js';
import { stateGet } from './commands/state.js';
import { streamsGet } from './commands/streams.js';
import { trustForget } from './commands/trust.js';
import { verify } from './commands/verify.js';
import { verifyFile } from './commands/verify-file.js';
import { whoami } from './commands/whoami.js';
import {
  CliError,
  createContext,
  DEFAULT_TENANT,
  DEFAULT_URL,
  type Io,
  type Settings,
  UsageError,
} from './context.js';

/**
 * `hefesto COMMAND [ARGS] [OPTIONS]`: parses the command line with node:util parseArgs,
 * reads the settings once (flag, else environment, else default), and runs one command.
 * Exit status: 0 done, 1 failed (or a verification found a bad seq), 2 usage error.
 */

export const COMMANDS: Command[] = [
  keysCreate,
  keysRevoke,
  keysRotateSigning,
  streamsGet,
  eventsTail,
  stateGet,
  verify,
  audit,
  trustForget,
  exportStream,
  verifyFile,
  importFile,
  compact,
  whoami,
  repair,
];

const GLOBAL: Options = {
  url: { type: 'string' },
  key: { type: 'string' },
  tenant: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const GLOBAL_HELP = `global options:
  --url URL      the Hefesto API (env HEFESTO_URL, default ${DEFAULT_URL})
  --key KEY      API key (env HEFESTO_KEY; prefer the variable: flags show in ps)
  --tenant T     keys create: the new key's tenant. Elsewhere not needed: the CLI asks the
                 server for the key's tenant (a different --tenant is refused). Offline
                 (verify-file) the tenant the file must belong to (env HEFESTO_TENANT;
                 a server too old to say: default "${DEFAULT_TENANT}")
  --json         machine-readable output; an error is one JSON object on stderr,
                 {"error":{"code","message",...}}
  -h, --help     this help, or a command's`;

/** Words of `text` in lines of at most `width` characters, each starting with `indent`. */
const wrap = (text: string, indent: string, width = 92): string => {
  const lines: string[] = [];
  let line = indent;
  for (const word of text.split(' ')) {
    if (line.length + word.length + 1 > width && line.trim() !== '') {
      lines.push(line);
      line = indent;
    }
    line += line.trim() === '' ? word : ` ${word}`;
  }
  return [...lines, line].join('\n');
};

const usageOf = (c: Command) => `hefesto ${c.name}${c.usage ? ` ${c.usage}` : ''}`;

export const helpText = (): string =>
  [
    'usage: hefesto COMMAND [ARGS] [OPTIONS]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${usageOf(c)}\n${wrap(c.summary, '      ')}`),
    '',
    GLOBAL_HELP,
    '',
    'exit status: 0 done, 1 failed or verification found a bad seq, 2 usage error',
  ].join('\n');

const commandHelp = (c: Command): string =>
  [`usage: ${usageOf(c)}`, '', wrap(c.summary, '  '), '', GLOBAL_HELP].join('\n');

const parse = (args: string[], options: Options, command?: Command) => {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    const unknown = /Unknown option '([^']+)'/.exec((err as Error).message)?.[1];
    if (unknown === undefined) throw new UsageError((err as Error).message);
    throw new UsageError(`unknown option ${unknown}${command ? ` for ${command.name}` : ''}`);
  }
};

/** The command named by the first one or two positionals. */
const findCommand = (positionals: string[]): Command | undefined => {
  const two = positionals.slice(0, 2).join(' ');
  return COMMANDS.find((c) => c.name === two) ?? COMMANDS.find((c) => c.name === positionals[0]);
};

const settingsOf = (values: Values, env: NodeJS.ProcessEnv): Settings => {
  const flag = (name: string) =>
    typeof values[name] === 'string' ? (values[name] as string) : undefined;
  const tenant = flag('tenant') ?? env.HEFESTO_TENANT;
  return {
    url: flag('url') ?? env.HEFESTO_URL ?? DEFAULT_URL,
    key: flag('key') ?? env.HEFESTO_KEY,
    tenant: tenant ?? DEFAULT_TENANT,
    tenantGiven: tenant !== undefined,
    json: values.json === true,
  };
};

const dispatch = async (argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> => {
  // First pass: every option any command knows, to find the command wherever options sit.
  const all = Object.assign({}, GLOBAL, ...COMMANDS.map((c) => c.options)) as Options;
  const first = parse(argv, all);
  const words = first.positionals[0] === 'help' ? first.positionals.slice(1) : first.positionals;
  const wantsHelp = first.values.help === true || first.positionals[0] === 'help';
  const command = findCommand(words);
  if (command === undefined) {
    if (wantsHelp || words.length === 0) {
      (wantsHelp ? io.stdout : io.stderr).write(`${helpText()}\n`);
      return wantsHelp ? 0 : 2;
    }
    throw new UsageError(`unknown command "${words.join(' ')}"`);
  }
  if (wantsHelp) {
    io.stdout.write(`${commandHelp(command)}\n`);
    return 0;
  }
  // Second pass: only this command's options.
  const { values, positionals } = parse(argv, { ...GLOBAL, ...command.options }, command);
  const args = positionals.slice(command.name.split(' ').length);
  if (args.length !== command.args.length) {
    const expected = command.args.length === 0 ? 'no arguments' : command.args.join(' ');
    throw new UsageError(
      `${command.name} takes ${expected}, got ${args.length === 0 ? 'none' : args.join(' ')}`,
    );
  }
  const ctx = createContext(settingsOf(values, env), io, env);
  return command.run(ctx, args, values);
};

/**
 * The innermost cause's message, e.g. `connect ECONNREFUSED 127.0.0.1:8787` under `fetch
 * failed`; nothing when the message already says it.
 */
const rootCause = (err: unknown): string | undefined => {
  let cause = err instanceof Error ? err.cause : undefined;
  let message: string | undefined;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++) {
    message = cause.message;
    cause = cause.cause;
  }
  return message !== undefined && err instanceof Error && err.message.includes(message)
    ? undefined
    : message;
};

/** The stable code and exit status of a failure: our own, the server's, the domain's. */
const codeOf = (err: unknown): [code: string, exitCode: number] => {
  if (err instanceof CliError) return [err.code, err.exitCode];
  if (err instanceof HefestoApiError || err instanceof HefestoError) return [err.code, 1];
  return ['ErrInternal', 1];
};

/** Problem members worth passing on in a JSON error (e.g. `currentSeq`, `stateDigest`). */
const problemExtras = (err: unknown): Record<string, unknown> => {
  if (!(err instanceof HefestoApiError)) return {};
  const problem: Problem = err.problem ?? { status: err.status, code: err.code };
  const {
    type: _t,
    title: _ti,
    detail: _d,
    code: _c,
    status: _s,
    instance: _i,
    ...extras
  } = problem;
  return err.status > 0 ? { status: err.status, ...extras } : extras;
};

/** Never let the key reach a terminal or a log through an error message. */
const redact = (text: string, key: string | undefined): string =>
  key && key.length >= 4 ? text.split(key).join('***') : text;

/**
 * Runs the CLI; resolves with the exit status. Errors are printed on stderr as one line,
 * `error: CODE: message`, or with --json as one JSON object,
 * `{"error":{"code":CODE,"message":...,"status":HTTP status,...problem members}}`.
 *
 * @example
 * ```ts
 * process.exitCode = await runCli(process.argv.slice(2), process.env);
 * ```
 */
export const runCli = async (
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: Io = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> => {
  try {
    return await dispatch(argv, env, io);
  } catch (err) {
    const [code, exitCode] = codeOf(err);
    const cause = err instanceof CliError ? undefined : rootCause(err);
    const message = `${err instanceof Error ? err.message : String(err)}${cause ? ` (${cause})` : ''}`;
    // Read leniently: the failure may be that the command line did not parse.
    const { values } = parseArgs({ args: argv, options: GLOBAL, strict: false });
    const secret = typeof values.key === 'string' ? values.key : env.HEFESTO_KEY;
    if (values.json === true) {
      const error = { code, message, ...problemExtras(err) };
      io.stderr.write(`${redact(JSON.stringify({ error }), secret)}\n`);
      return exitCode;
    }
    io.stderr.write(`${redact(`error: ${code}: ${message}`, secret)}\n`);
    if (exitCode === 2) io.stderr.write("run 'hefesto --help' for usage\n");
    return exitCode;
  }
};
