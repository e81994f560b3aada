/**
 * ValueOwners: which object holds each attribute Value, by value id, as two
 * typed arrays indexed by id (about 5 bytes per id handed out anywhere).
 * Values live inside their object's record; this is how /values/{id}/ and the
 * id-ordered /values/ list find them without a table of their own.
 *
 * | operation            | cost |
 * |----------------------|------|
 * | set / clear / owner  | O(1), amortised growth |
 * | ids in order         | O(highest id) sequential scan |
 */
export class ValueOwners {
  private kinds = new Uint8Array(1024);
  private owners = new Int32Array(1024);
  private max = 0;

  set(valueId: number, kindSlot: number, ownerId: number): void {
    if (valueId >= this.kinds.length) {
      let size = this.kinds.length;
      while (size <= valueId) size *= 2;
      const k = new Uint8Array(size);
      k.set(this.kinds);
      this.kinds = k;
      const o = new Int32Array(size);
      o.set(this.owners);
      this.owners = o;
    }
    this.kinds[valueId] = kindSlot + 1;
    this.owners[valueId] = ownerId;
    if (valueId > this.max) this.max = valueId;
  }

  clear(valueId: number): void {
    if (valueId < this.kinds.length) this.kinds[valueId] = 0;
  }

  owner(valueId: number): { kindSlot: number; id: number } | undefined {
    if (!Number.isSafeInteger(valueId) || valueId < 0 || valueId >= this.kinds.length || this.kinds[valueId] === 0) return undefined;
    return { kindSlot: this.kinds[valueId] - 1, id: this.owners[valueId] };
  }

  *ids(): Iterable<number> {
    for (let i = 1; i <= this.max; i++) if (this.kinds[i] !== 0) yield i;
  }
}
