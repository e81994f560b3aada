/**
 * The feed's released watermark in shared memory (src/feed/watermark.ts): what the hub publishes the webhook
 * worker reads, and a reader that asked is told of the next publish once.
 */
import { describe, expect, test } from 'vitest';
import { SharedWatermark } from '../../src/feed/watermark.js';

describe('SharedWatermark', () => {
  test('a reader on the same buffer reads what the writer published, beyond 2^32', () => {
    const writer = new SharedWatermark();
    const reader = new SharedWatermark(writer.buffer);
    expect(reader.read()).toBe(0);
    writer.publish(41);
    expect(reader.read()).toBe(41);
    writer.publish(2 ** 40 + 3);
    expect(reader.read()).toBe(2 ** 40 + 3);
  });

  test('publish calls onWanted once after each want, and not while nobody asked', () => {
    const writer = new SharedWatermark();
    const reader = new SharedWatermark(writer.buffer);
    let woken = 0;
    writer.onWanted = () => woken++;
    writer.publish(1);
    expect(woken).toBe(0);
    reader.want();
    writer.publish(2);
    writer.publish(3);
    expect(woken).toBe(1);
    reader.want();
    reader.want();
    writer.publish(4);
    expect(woken).toBe(2);
  });
});
