/**
 * Set-query parser (docs/api.md §21): POSIX word splitting, then terms.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { parseSetQuery, type SetTerm } from '../../src/query/setquery-parse.js';

const t = (op: SetTerm['op'], name: string, value: string, regex = false): SetTerm => ({ op, name, value, regex });
const and = (name: string, value: string, regex = false) => t('intersect', name, value, regex);

/** The words of a query, for splitting tests whose words have no marker, `=` or `_regex` suffix (so word = name). */
const words = (query: string): string[] => parseSetQuery(query).map((x) => x.name);

/** The ApiError parseSetQuery throws, as status + body. */
function failure(query: string): { status: number; body: unknown } {
  try {
    parseSetQuery(query);
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return { status: (e as ApiError).status, body: (e as ApiError).body };
  }
  throw new Error(`expected parseSetQuery(${JSON.stringify(query)}) to throw`);
}

const NO_CLOSING = { status: 400, body: { query: 'No closing quotation' } };
const NO_ESCAPED = { status: 400, body: { query: 'No escaped character' } };

describe('set-query terms', () => {
  test('parseSetQuery does give [] for an empty or blank query', () => {
    expect(parseSetQuery('')).toEqual([]);
    expect(parseSetQuery('   ')).toEqual([]);
    expect(parseSetQuery(' \t\n \r\n\t ')).toEqual([]);
  });

  test('parseSetQuery does parse the gaps §21 example queries', () => {
    expect(parseSetQuery('owner=jathan')).toEqual([and('owner', 'jathan')]);
    expect(parseSetQuery('owner=jathan -role=br')).toEqual([and('owner', 'jathan'), t('difference', 'role', 'br')]);
    expect(parseSetQuery('role=br +role=dr')).toEqual([and('role', 'br'), t('union', 'role', 'dr')]);
    expect(parseSetQuery('-role=br')).toEqual([t('difference', 'role', 'br')]);
    expect(parseSetQuery('role_regex=^b')).toEqual([and('role', '^b', true)]);
    expect(parseSetQuery('fake=1')).toEqual([and('fake', '1')]);
  });

  test('parseSetQuery does pick the operation from one leading marker and remove only that one character', () => {
    expect(parseSetQuery('+a=1')).toEqual([t('union', 'a', '1')]);
    expect(parseSetQuery('-a=1')).toEqual([t('difference', 'a', '1')]);
    expect(parseSetQuery('a=1')).toEqual([t('intersect', 'a', '1')]);
    expect(parseSetQuery('++a=1')).toEqual([t('union', '+a', '1')]);
    expect(parseSetQuery('+-a=1')).toEqual([t('union', '-a', '1')]);
    expect(parseSetQuery('--a=1')).toEqual([t('difference', '-a', '1')]);
    expect(parseSetQuery('a=+1 b=-2')).toEqual([and('a', '+1'), and('b', '-2')]);
    expect(parseSetQuery('a+b=1')).toEqual([and('a+b', '1')]);
  });

  test('parseSetQuery does keep a bare "+" or "-" as a term with an empty name', () => {
    expect(parseSetQuery('+')).toEqual([t('union', '', '')]);
    expect(parseSetQuery('-')).toEqual([t('difference', '', '')]);
    expect(parseSetQuery('a=1 - +')).toEqual([and('a', '1'), t('difference', '', ''), t('union', '', '')]);
    expect(parseSetQuery('+=x')).toEqual([t('union', '', 'x')]);
  });

  test('parseSetQuery does split name and value at the first "="', () => {
    expect(parseSetQuery('a=b=c')).toEqual([and('a', 'b=c')]);
    expect(parseSetQuery('a==')).toEqual([and('a', '=')]);
    expect(parseSetQuery('=v')).toEqual([and('', 'v')]);
    expect(parseSetQuery('=')).toEqual([and('', '')]);
    expect(parseSetQuery('a=')).toEqual([and('a', '')]);
    expect(parseSetQuery('-a=b=c=d')).toEqual([t('difference', 'a', 'b=c=d')]);
  });

  test('parseSetQuery does give value "" when there is no "="', () => {
    expect(parseSetQuery('owner')).toEqual([and('owner', '')]);
    expect(parseSetQuery('+owner -role')).toEqual([t('union', 'owner', ''), t('difference', 'role', '')]);
  });

  test('parseSetQuery does strip one "_regex" suffix from the name and mark the term as regex', () => {
    expect(parseSetQuery('role_regex=^b')).toEqual([and('role', '^b', true)]);
    expect(parseSetQuery('a_regex_regex=x')).toEqual([and('a_regex', 'x', true)]);
    expect(parseSetQuery('a_regex_b=x')).toEqual([and('a_regex_b', 'x')]);
    expect(parseSetQuery('_regex=x')).toEqual([and('', 'x', true)]);
    expect(parseSetQuery('-role_regex=^b.*$')).toEqual([t('difference', 'role', '^b.*$', true)]);
    expect(parseSetQuery('+role_regex')).toEqual([t('union', 'role', '', true)]);
    expect(parseSetQuery('a=x_regex')).toEqual([and('a', 'x_regex')]);
    expect(parseSetQuery('a_REGEX=x')).toEqual([and('a_REGEX', 'x')]);
    expect(parseSetQuery('a_regexx=x')).toEqual([and('a_regexx', 'x')]);
  });

  test('parseSetQuery does not compile regexes or check attribute names', () => {
    expect(parseSetQuery('role_regex=[')).toEqual([and('role', '[', true)]);
    expect(parseSetQuery('no_such_attribute=1')).toEqual([and('no_such_attribute', '1')]);
  });

  test('parseSetQuery does apply term rules after unquoting', () => {
    expect(parseSetQuery('"-role=br"')).toEqual([t('difference', 'role', 'br')]);
    expect(parseSetQuery("'+role'=dr")).toEqual([t('union', 'role', 'dr')]);
    expect(parseSetQuery('\\-role=br')).toEqual([t('difference', 'role', 'br')]);
    expect(parseSetQuery('"a=b"=c')).toEqual([and('a', 'b=c')]);
    expect(parseSetQuery('role"_regex"=x')).toEqual([and('role', 'x', true)]);
  });

  test('parseSetQuery does return terms in query order', () => {
    expect(parseSetQuery('a=1 +b=2 -c=3 d_regex=4 +e -f')).toEqual([
      and('a', '1'),
      t('union', 'b', '2'),
      t('difference', 'c', '3'),
      and('d', '4', true),
      t('union', 'e', ''),
      t('difference', 'f', ''),
    ]);
  });
});

describe('set-query word splitting', () => {
  test('parseSetQuery does treat runs of spaces, tabs, CR and newlines as one separator', () => {
    expect(words('a  b')).toEqual(['a', 'b']);
    expect(words('  a\tb\n\nc \t\n d  ')).toEqual(['a', 'b', 'c', 'd']);
    expect(words('a\r\nb\rc')).toEqual(['a', 'b', 'c']);
    expect(parseSetQuery('\n owner=jathan \t -role=br \n')).toEqual([and('owner', 'jathan'), t('difference', 'role', 'br')]);
  });

  test('parseSetQuery does not split on other whitespace characters', () => {
    expect(words('a\u000bb a\fb a\u00a0b a\u2003b')).toEqual(['a\u000bb', 'a\fb', 'a\u00a0b', 'a\u2003b']);
  });

  test('parseSetQuery does remove quotes that occur mid-word', () => {
    expect(parseSetQuery('owner="jathan x"')).toEqual([and('owner', 'jathan x')]);
    expect(parseSetQuery("owner='jathan x'")).toEqual([and('owner', 'jathan x')]);
    expect(parseSetQuery('own"er=ja"than')).toEqual([and('owner', 'jathan')]);
    expect(words('a"b c"d')).toEqual(['ab cd']);
    expect(words("a'b c'd e")).toEqual(['ab cd', 'e']);
    expect(words(`a'b"c'd`)).toEqual(['ab"cd']);
    expect(words(`"a'b"c'd"'`)).toEqual([`a'bcd"`]);
    expect(words(`"x"'y'z`)).toEqual(['xyz']);
  });

  test('parseSetQuery does keep an empty quoted string as an empty word', () => {
    expect(parseSetQuery("''")).toEqual([and('', '')]);
    expect(parseSetQuery('""')).toEqual([and('', '')]);
    expect(words(`'' "" ''`)).toEqual(['', '', '']);
    expect(parseSetQuery('a="" b=\'\'')).toEqual([and('a', ''), and('b', '')]);
    expect(words("a'' ''b")).toEqual(['a', 'b']);
    expect(words('a""b')).toEqual(['ab']);
  });

  test('parseSetQuery does take single-quoted text literally, backslashes included', () => {
    expect(words("'a\\b'")).toEqual(['a\\b']);
    expect(words("'a\\'")).toEqual(['a\\']);
    expect(words("'\\\\'")).toEqual(['\\\\']);
    expect(words('\'a "b" $c `d` #e\'')).toEqual(['a "b" $c `d` #e']);
    expect(words("'a\nb'")).toEqual(['a\nb']);
    expect(parseSetQuery("owner_regex='^j\\w+$'")).toEqual([and('owner', '^j\\w+$', true)]);
  });

  test('parseSetQuery does let a backslash in double quotes escape only " \\ $ ` and newline', () => {
    expect(words('"a\\"b"')).toEqual(['a"b']);
    expect(words('"a\\\\b"')).toEqual(['a\\b']);
    expect(words('"a\\$b"')).toEqual(['a$b']);
    expect(words('"a\\`b"')).toEqual(['a`b']);
    expect(words('"a\\\nb"')).toEqual(['ab']);
    // Any other character keeps its backslash.
    expect(words('"a\\b"')).toEqual(['a\\b']);
    expect(words('"\\n\\t\\d"')).toEqual(['\\n\\t\\d']);
    expect(words('"a\\\'b"')).toEqual(["a\\'b"]);
    expect(words('"a\\ b"')).toEqual(['a\\ b']);
    expect(words('"\\#"')).toEqual(['\\#']);
    expect(parseSetQuery('role_regex="^b\\d+\\\\$"')).toEqual([and('role', '^b\\d+\\$', true)]);
    // Unescaped specials are plain text: there are no expansions.
    expect(words('"$HOME `x` #c"')).toEqual(['$HOME `x` #c']);
  });

  test('parseSetQuery does let a backslash outside quotes escape any character', () => {
    expect(words('a\\ b')).toEqual(['a b']);
    expect(words('a\\\tb')).toEqual(['a\tb']);
    expect(words('\\"a\\"')).toEqual(['"a"']);
    expect(words("\\'a")).toEqual(["'a"]);
    expect(words('a\\\\b')).toEqual(['a\\b']);
    expect(words('\\a\\b\\c')).toEqual(['abc']);
    expect(words('\\#x')).toEqual(['#x']);
    expect(words('\\ ')).toEqual([' ']);
    expect(parseSetQuery('owner=jathan\\ x')).toEqual([and('owner', 'jathan x')]);
    // Escaping happens before the term split, so an escaped "=" still splits.
    expect(parseSetQuery('a\\=b=c')).toEqual([and('a', 'b=c')]);
  });

  test('parseSetQuery does treat backslash-newline outside quotes as a line continuation', () => {
    expect(words('a\\\nb')).toEqual(['ab']);
    expect(words('a \\\n b')).toEqual(['a', 'b']);
    expect(words('\\\n')).toEqual([]);
    expect(words('a\\\n')).toEqual(['a']);
    expect(parseSetQuery('owner=jat\\\nhan')).toEqual([and('owner', 'jathan')]);
  });

  test('parseSetQuery does treat "#" as an ordinary character', () => {
    expect(words('a#b #c # d#')).toEqual(['a#b', '#c', '#', 'd#']);
    expect(parseSetQuery('color=#fff #x=1')).toEqual([and('color', '#fff'), and('#x', '1')]);
  });

  test('parseSetQuery does pass unicode through unchanged', () => {
    expect(parseSetQuery('é=ü')).toEqual([and('é', 'ü')]);
    expect(parseSetQuery('owner="Jäthan 日本" -😀=🚀')).toEqual([and('owner', 'Jäthan 日本'), t('difference', '😀', '🚀')]);
    expect(parseSetQuery("ключ_regex='^зна'")).toEqual([and('ключ', '^зна', true)]);
    expect(words('\\😀 "\\😀"')).toEqual(['😀', '\\😀']);
  });
});

describe('set-query errors', () => {
  test('parseSetQuery does answer 400 "No closing quotation" for an unbalanced quote', () => {
    for (const q of ['"', "'", 'owner="jathan', "owner='jathan", 'a "b" "c', "'a'b'", '"\\"', "'abc\\", 'a="x\\\\', 'ok=1 "'])
      expect(failure(q), q).toEqual(NO_CLOSING);
  });

  test('parseSetQuery does answer 400 "No escaped character" for a trailing lone backslash', () => {
    for (const q of ['\\', 'a\\', 'owner=jathan \\', 'a\\\\\\', '"abc\\']) expect(failure(q), q).toEqual(NO_ESCAPED);
  });

  test('parseSetQuery does accept an escaped trailing backslash', () => {
    expect(words('a\\\\')).toEqual(['a\\']);
    expect(words("'\\'")).toEqual(['\\']);
  });
});

/** Strings whose splitting must equal Python's shlex.split (POSIX mode). */
const SHLEX_CASES: string[] = [
  '',
  '   ',
  'owner=jathan',
  'owner=jathan -role=br',
  'role=br +role=dr',
  '-role=br',
  'role_regex=^b',
  'a  b\t\tc\n\nd',
  'a\r\nb',
  'owner="jathan x"',
  "owner='jathan x'",
  'own"er=ja"than',
  'a"b c"d e',
  `a'b"c'd`,
  `"a'b"c'd"'`,
  "''",
  '""',
  `'' "" ''`,
  "a'' ''b",
  'a""b',
  "'a\\b'",
  "'a\\'",
  '"a\\"b"',
  '"a\\\\b"',
  '"a\\b"',
  '"\\n\\t"',
  '"a\\ b"',
  'a\\ b',
  'a\\\tb',
  '\\"a\\"',
  "\\'a",
  '\\a\\b\\c',
  'a#b #c # d#',
  '\\#x',
  'é=ü "Jäthan 日本" -😀=🚀',
  'a=b=c',
  '+ - ++a --b',
  'a\u000bb a\u00a0b',
  'role_regex=\'^b\\d+$\' +x="y z"',
  '"',
  "'",
  'owner="jathan',
  "'abc\\",
  '"\\"',
  '\\',
  'a\\',
  '"abc\\',
];

/** Term rules applied to Python's words, to compare with parseSetQuery. */
function termOf(word: string): SetTerm {
  const op = word[0] === '+' ? 'union' : word[0] === '-' ? 'difference' : 'intersect';
  const rest = op === 'intersect' ? word : word.slice(1);
  const i = rest.indexOf('=');
  const name = i < 0 ? rest : rest.slice(0, i);
  const value = i < 0 ? '' : rest.slice(i + 1);
  return name.endsWith('_regex') ? t(op, name.slice(0, -6), value, true) : t(op, name, value);
}

const hasPython = spawnSync('python3', ['-c', 'import shlex'], { stdio: 'ignore' }).status === 0;

describe('set-query differential', () => {
  test.skipIf(!hasPython)('parseSetQuery does split words like python3 shlex.split', () => {
    const script = [
      'import json, shlex, sys',
      'out = []',
      'for s in json.loads(sys.stdin.buffer.read().decode("utf-8")):',
      '    try:',
      '        out.append({"words": shlex.split(s)})',
      '    except ValueError as e:',
      '        out.append({"error": str(e)})',
      'sys.stdout.write(json.dumps(out))',
    ].join('\n');
    const raw = execFileSync('python3', ['-c', script], { input: JSON.stringify(SHLEX_CASES), encoding: 'utf8' });
    const expected = JSON.parse(raw) as Array<{ words?: string[]; error?: string }>;
    expect(expected).toHaveLength(SHLEX_CASES.length);
    SHLEX_CASES.forEach((q, i) => {
      const want = expected[i]!;
      const label = JSON.stringify(q);
      if (want.error !== undefined) {
        expect(failure(q), label).toEqual({ status: 400, body: { query: want.error } });
      } else {
        expect(parseSetQuery(q), label).toEqual(want.words!.map(termOf));
      }
    });
  });
});
