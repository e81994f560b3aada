/**
 * No source line over the formatter's width (biome.json `formatter.lineWidth`, 140). The formatter
 * wraps code but never splits a string, a template or a comment, so those are checked here: a long
 * message is split into concatenated parts, a long comment into lines.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const WIDTH: number = JSON.parse(readFileSync(path.join(ROOT, 'biome.json'), 'utf8')).formatter.lineWidth;

/** `file:line (length)` of each line of `text` longer than `width` characters (code points, as an editor counts them). */
function longLines(file: string, text: string, width: number): string[] {
  return text.split('\n').flatMap((line, i) => {
    const length = [...line].length;
    return length > width ? [`${file}:${i + 1} (${length})`] : [];
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

describe('source line length', () => {
  test('line length check names each line past the width, counting characters rather than bytes', () => {
    const text = ['short', 'x'.repeat(11), '–'.repeat(10), ''].join('\n');
    expect(longLines('a.ts', text, 10)).toEqual(['a.ts:2 (11)']);
  });

  test(`no line of src/ is over ${WIDTH} characters`, () => {
    expect(WIDTH).toBe(140);
    const files = sourceFiles(path.join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(100);
    const long = files.flatMap((f) => longLines(path.relative(ROOT, f), readFileSync(f, 'utf8'), WIDTH));
    expect(long).toEqual([]);
  });
});
