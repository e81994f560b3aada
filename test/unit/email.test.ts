import { describe, expect, test } from 'vitest';
import { isValidEmail } from '../../src/auth/email.js';

describe('isValidEmail (docs/api.md §3.5)', () => {
  test.each([
    'admin@localhost',
    'jathan@example.com',
    'first.last@example.com',
    "o'brien@example.org",
    'a+tag@sub.example.co.uk',
    "!#$%&'*+/=?^_`{|}~-@example.com",
    'UPPER@EXAMPLE.COM',
    'x@a-b.example.com',
    'x@1.example.com',
    'x@example.xn--p1ai',
    'x@example.a-b',
    'x@example.-ab',
    `x@${'a'.repeat(63)}.com`,
    `x@example.${'a'.repeat(63)}`,
    `${'a'.repeat(300)}@example.com`,
  ])('isValidEmail accepts %s', (email) => {
    expect(isValidEmail(email)).toBe(true);
  });

  test.each([
    '',
    'foo',
    'foo@bar',
    'a b@x.com',
    '@example.com',
    'a@',
    'a@@example.com',
    'a@b@example.com',
    '.a@example.com',
    'a.@example.com',
    'a..b@example.com',
    'a"b@example.com',
    'a,b@example.com',
    'a:b@example.com',
    'ü@example.com',
    'a@example.c',
    'a@example.com-',
    'a@-example.com',
    'a@example-.com',
    'a@example..com',
    'a@.example.com',
    'a@example.com.',
    'a@exa_mple.com',
    'a@LOCALHOST',
    'a@localhost.',
    'a@[127.0.0.1]',
    ' a@example.com',
    'a@example.com ',
    'a@example.com\n',
    `x@${'a'.repeat(64)}.com`,
    `x@example.${'a'.repeat(64)}`,
  ])('isValidEmail rejects %j', (email) => {
    expect(isValidEmail(email)).toBe(false);
  });
});
