/** The operator commands and their usage, apart from their code so main.ts can name them before loading lmdb. */
export const OPS_COMMANDS = ['backup', 'restore', 'export', 'import'] as const;
export type OpsCommand = (typeof OPS_COMMANDS)[number];

export const OPS_USAGE: Record<OpsCommand, string> = {
  backup: 'backup <dir> [--data-dir D]',
  restore: 'restore <dir> [--data-dir D] [--force]',
  export:
    'export [--data-dir D] [--with-secret-keys | --without-secrets] > dump.ndjson ' +
    '(a dump holds secrets: every auth_string, and secret keys with --with-secret-keys; --without-secrets leaves them out)',
  import: 'import <dump.ndjson> [--data-dir D] [--batch N]',
};
