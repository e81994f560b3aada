/**
 * The operator commands, their arguments and flags, declared once: main.ts
 * names them before loading lmdb, cli.ts parses with this table
 * (node:util parseArgs) and prints each command's --help from it. A new flag
 * is one entry in its command's `flags`, read in cli.ts as `args.flags[name]`.
 */
export const OPS_COMMANDS = ['backup', 'restore', 'export', 'import', 'users'] as const;
export type OpsCommand = (typeof OPS_COMMANDS)[number];

export interface OpsFlag {
  type: 'string' | 'boolean';
  /** What a string flag's value is called in the usage line (`N`, `URL`). */
  value?: string;
  help: string;
}

export interface OpsSpec {
  /** Positional arguments, in order, as the usage line names them. */
  args: readonly string[];
  /** One line: what the command does. */
  summary: string;
  /** Lines after the flags: the rules an operator must know. */
  notes?: readonly string[];
  /** Flags besides --data-dir and --help, by name without the dashes. */
  flags: Readonly<Record<string, OpsFlag>>;
  /** Shown after the arguments in the usage line (`> dump.ndjson`). */
  redirect?: string;
}

const DATA_DIR: OpsFlag = { type: 'string', value: 'D', help: 'The data dir (default: DATA_DIR, else ./data).' };
const HELP: OpsFlag = { type: 'boolean', help: 'This text.' };

export const OPS: Record<OpsCommand, OpsSpec> = {
  backup: {
    args: ['<dir>'],
    summary: 'Writes a consistent, compacted copy of the store into the new directory <dir>, served or not.',
    notes: ['Runs beside a serving server: it only reads the store. <dir> must not exist; it appears only when complete.'],
    flags: {},
  },
  restore: {
    args: ['<dir>'],
    summary: 'Puts the backup in <dir> into the data dir.',
    notes: ['Refuses while any process has the data dir open (a server, a backup, an export or an import).'],
    flags: { force: { type: 'boolean', help: 'Replace a store the data dir already holds.' } },
  },
  export: {
    args: [],
    summary: 'Writes the whole store as NDJSON on stdout, from one snapshot.',
    notes: [
      "A dump holds secrets: every user's auth_string (token signatures), and with --with-secret-keys their secret keys. " +
        'Keep it private, or leave them out with --without-secrets.',
    ],
    flags: {
      'with-secret-keys': { type: 'boolean', help: "Include users' secret keys (the dump is then a secret)." },
      'without-secrets': { type: 'boolean', help: 'Leave every secret out: no auth_string, no secret key.' },
    },
    redirect: '> dump.ndjson',
  },
  import: {
    args: ['<dump.ndjson>'],
    summary: 'Loads a dump into an empty data dir; rerun the same command to resume an interrupted import.',
    notes: ['Refuses while a server holds the data dir.'],
    flags: { batch: { type: 'string', value: 'N', help: 'Records per write set and checkpoint (1–1000000, default 10000).' } },
  },
  users: {
    args: ['<add|promote>', '<email>'],
    summary: 'add: creates a user (a superuser with --superuser; an existing user is then promoted). promote: makes one a superuser.',
    notes: [
      'Prints the user as JSON on stdout, with its secret_key when it was created.',
      'On LMDB it refuses while a server holds the data dir: stop it, or create the user through the API.',
    ],
    flags: {
      superuser: { type: 'boolean', help: 'add: the user is (or becomes) a superuser.' },
      store: { type: 'string', value: 'URL', help: 'A postgres:// store instead of the data dir (default: NETSOT_STORE, else STORE).' },
    },
  },
};

/** Every flag of a command, --data-dir and --help included, as parseArgs takes them. */
export function opsFlags(command: OpsCommand): Record<string, OpsFlag> {
  return { 'data-dir': DATA_DIR, ...OPS[command].flags, help: HELP };
}

export function opsUsage(command: OpsCommand): string {
  const spec = OPS[command];
  const flags = Object.entries(opsFlags(command))
    .filter(([name]) => name !== 'help')
    .map(([name, f]) => `[--${name}${f.type === 'string' ? ` ${f.value}` : ''}]`);
  return [command, ...spec.args, ...flags, ...(spec.redirect ? [spec.redirect] : [])].join(' ');
}

/** `<command> --help`: usage, what it does, each flag, the notes. */
export function opsHelp(command: OpsCommand): string {
  const spec = OPS[command];
  const flags = Object.entries(opsFlags(command)).map(([name, f]) => [`--${name}${f.type === 'string' ? ` ${f.value}` : ''}`, f.help]);
  const width = Math.max(...flags.map(([f]) => f.length));
  return [
    `usage: node dist/main.js ${opsUsage(command)}`,
    '',
    spec.summary,
    ...(spec.notes ?? []),
    '',
    ...flags.map(([f, help]) => `  ${f.padEnd(width)}  ${help}`),
    '',
  ].join('\n');
}
