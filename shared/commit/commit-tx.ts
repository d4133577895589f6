import { ConflictError } from '../domain/errors.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';

/**
 * What an item of a commit transaction stands for, so a refusal names its reason instead of
 * its position: the head's condition (it moved, or its tree or witness fields did), a record
 * the commit creates (the segment's index), a checkpoint label already taken, a check a caller
 * added (e.g. that a rolled-forward writer was not refused), the chain-end anchor (the head is
 * not the end of the chain), and the lease guard (last: refused by the lease alone).
 */
export type CommitItem =
  | { kind: 'head' }
  | { kind: 'index' }
  | { kind: 'label'; label: string }
  | { kind: 'extra' }
  | { kind: 'check' }
  | { kind: 'chain-end' }
  | { kind: 'lease' };

/**
 * A commit transaction that lost a condition: which item refused it (`refused`), with what
 * is stored there now. Still a ConflictError (its `index` and `current` as before), so a
 * caller that only asks "did it lose?" needs nothing new.
 */
export class CommitRefusedError extends ConflictError<Item> {
  readonly refused: CommitItem;

  constructor(refused: CommitItem, cause: ConflictError) {
    super(cause.message, cause.current as Item | undefined, cause.index, { cause });
    this.refused = refused;
  }
}

/** Builds one commit's transaction item by item, each with what it stands for. */
export class CommitTransaction {
  readonly #ops: TransactOp[] = [];
  readonly #items: CommitItem[] = [];

  add(item: CommitItem, ...ops: TransactOp[]): this {
    for (const op of ops) {
      this.#ops.push(op);
      this.#items.push(item);
    }
    return this;
  }

  get ops(): readonly TransactOp[] {
    return this.#ops;
  }

  /** Writes it; a lost condition is a CommitRefusedError naming its item. */
  async commit(records: RecordStore): Promise<void> {
    try {
      await records.transact(this.#ops);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      const refused = err.index === undefined ? undefined : this.#items[err.index];
      throw new CommitRefusedError(refused ?? { kind: 'extra' }, err);
    }
  }
}
