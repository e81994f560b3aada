import { describe, expect, test } from 'vitest';
import { countListItems, mayExceed } from '../../src/http/list-items.js';
import { prng } from '../helpers/prng.js';

const count = (text: string) => countListItems(Buffer.from(text, 'utf8'));

/** A random JSON value whose strings carry the characters that could fool a byte scanner. */
function randomValue(r: () => number, depth: number): unknown {
  const pick = Math.floor(r() * (depth > 3 ? 4 : 7));
  const tricky = ['', ',', '[', ']', '{', '}', '"', '\\', '\\"', 'é,ü', '𝄞', '\\\\', 'a"b,c'];
  switch (pick) {
    case 0:
      return Math.floor(r() * 1e6) - 5e5;
    case 1:
      return tricky[Math.floor(r() * tricky.length)] + tricky[Math.floor(r() * tricky.length)];
    case 2:
      return r() < 0.5 ? null : r() < 0.5;
    case 3:
      return r() * 1e-3;
    case 4:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 4); i > 0; i--) o[String(randomValue(r, 9))] = randomValue(r, depth + 1);
      return o;
    }
  }
}

describe('countListItems', () => {
  test('countListItems counts top-level items of lists and ignores nesting, strings and whitespace', () => {
    expect(count('[]')).toBe(0);
    expect(count(' [ \n ] ')).toBe(0);
    expect(count('[1]')).toBe(1);
    expect(count('[1,2,3]')).toBe(3);
    expect(count('[[1,2],[3,4]]')).toBe(2);
    expect(count('[{"a":[1,2,3],"b":{"c":1}}, {}]')).toBe(2);
    expect(count('["a,b", "c\\",d", "e\\\\", "f"]')).toBe(4);
    expect(count('[{}]')).toBe(1);
  });

  test('countListItems answers -1 for bodies that are not lists', () => {
    expect(count('{"a":[1,2]}')).toBe(-1);
    expect(count('  "[1,2]"')).toBe(-1);
    expect(count('')).toBe(-1);
  });

  test('countListItems agrees with JSON.parse on random lists', () => {
    const r = prng(1501);
    for (let i = 0; i < 2000; i++) {
      const list = Array.from({ length: Math.floor(r() * 12) }, () => randomValue(r, 0));
      const text = r() < 0.5 ? JSON.stringify(list) : JSON.stringify(list, null, 2);
      expect(count(text), text).toBe(list.length);
    }
  });

  test('mayExceed is false only for bodies too short to hold more than max items', () => {
    for (let max = 0; max < 50; max++) {
      const shortest = JSON.stringify(Array.from({ length: max + 1 }, () => 1));
      expect(mayExceed(Buffer.from(shortest), max)).toBe(true);
      expect(mayExceed(Buffer.from(shortest.slice(1)), max)).toBe(false);
    }
  });
});
