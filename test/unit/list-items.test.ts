import { describe, expect, test } from 'vitest';
import { countItems, mayExceed } from '../../src/schema/list-items.js';
import { itemsOf } from '../helpers/items.js';
import { prng } from '../helpers/prng.js';

const count = (text: string) => countItems(Buffer.from(text, 'utf8')).list;
const total = (text: string) => countItems(Buffer.from(text, 'utf8')).total;

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

describe('countItems', () => {
  test('countItems counts top-level items of lists and ignores nesting, strings and whitespace', () => {
    expect(count('[]')).toBe(0);
    expect(count(' [ \n ] ')).toBe(0);
    expect(count('[1]')).toBe(1);
    expect(count('[1,2,3]')).toBe(3);
    expect(count('[[1,2],[3,4]]')).toBe(2);
    expect(count('[{"a":[1,2,3],"b":{"c":1}}, {}]')).toBe(2);
    expect(count('["a,b", "c\\",d", "e\\\\", "f"]')).toBe(4);
    expect(count('[{}]')).toBe(1);
  });

  test('countItems answers -1 for bodies that are not lists', () => {
    expect(count('{"a":[1,2]}')).toBe(-1);
    expect(count('  "[1,2]"')).toBe(-1);
    expect(count('')).toBe(-1);
  });

  test('countItems agrees with JSON.parse on random lists', () => {
    const r = prng(1501);
    for (let i = 0; i < 2000; i++) {
      const list = Array.from({ length: Math.floor(r() * 12) }, () => randomValue(r, 0));
      const text = r() < 0.5 ? JSON.stringify(list) : JSON.stringify(list, null, 2);
      expect(count(text), text).toBe(list.length);
    }
  });

  test('countItems counts every element of every nested list, and 1 for a body that is no list', () => {
    expect(total('[]')).toBe(0);
    expect(total('')).toBe(0);
    expect(total('[1,2,3]')).toBe(3);
    expect(total('{"a":1}')).toBe(1);
    expect(total('"x"')).toBe(1);
    expect(total('{"addresses":["10.0.0.1/32","10.0.0.2/32"]}')).toBe(3);
    expect(total('[{"addresses":["a","b"]},{"addresses":[]}]')).toBe(4);
    expect(total('[[1,[2,3]],[]]')).toBe(6);
    expect(total('[{"a":{"b":[1,{"c":[2,3]}]}}]')).toBe(5);
    expect(total('["[1,2]", {"x": "[,]"}]')).toBe(2);
  });

  test('countItems tells how deep the body nests', () => {
    const depth = (text: string) => countItems(Buffer.from(text, 'utf8')).depth;
    expect(depth('1')).toBe(0);
    expect(depth('[]')).toBe(1);
    expect(depth('[{"a":[[1]]},[]]')).toBe(4);
    expect(depth('["[[[["]')).toBe(1);
    expect(depth('['.repeat(5000) + ']'.repeat(5000))).toBe(5000);
  });

  test('countItems totals agree with the parsed value on random bodies', () => {
    const r = prng(2303);
    for (let i = 0; i < 2000; i++) {
      const value = r() < 0.7 ? Array.from({ length: Math.floor(r() * 8) }, () => randomValue(r, 0)) : randomValue(r, 0);
      const text = r() < 0.5 ? JSON.stringify(value) : JSON.stringify(value, null, 2);
      expect(total(text), text).toBe(itemsOf(value));
    }
  });

  test('mayExceed is false only for bodies too short to hold more than max items, nested ones included', () => {
    for (let max = 0; max < 30; max++) {
      // The densest nesting: a list of lists of one-digit numbers.
      for (const width of [1, 2, 3]) {
        const lists = Math.ceil((max + 1) / (width + 1));
        const body = JSON.stringify(Array.from({ length: lists }, () => Array.from({ length: width }, () => 1)));
        if (total(body) > max) expect(mayExceed(Buffer.from(body), max)).toBe(true);
      }
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
