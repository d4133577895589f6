import type { FunctionName } from './bundling.js';
import type { StorageAccess } from './storage.js';

/**
 * The storage port operations each function's code calls, and so the only ones its role
 * may perform (HefestoStorage.connect turns them into IAM actions). A test reads the code
 * bundled into each function and requires these lists to match it exactly: a new call
 * without a grant, or a grant without a call, fails the infra tests.
 *
 * - api: reads and verifies (get), appends (segment create-only, then one transaction:
 *   head update, index and idempotency puts, and the writer lease's fencing check; a
 *   fenced writer's orphan segment is replaced by compare-and-swap, If-Match), keys
 *   (put, update), snapshots and their index (put, query), effects (put, update, query),
 *   retention settings (a transaction that also deletes stale scheduled visits).
 * - compactor: merges segments (list, get, create-only puts, deletes after the grace
 *   period), writes due base snapshots, prunes and expires streams (record deletes), and
 *   fences itself with a lease (condition checks inside its transactions). It also carries
 *   the ledger's append code (bundled with the hydration it uses), hence If-Match.
 */
export const FUNCTION_ACCESS: Record<FunctionName, StorageAccess> = {
  api: {
    objects: ['get', 'putIfAbsent', 'putIfMatch'],
    records: ['get', 'put', 'update', 'delete', 'query', 'transact', 'check'],
  },
  compactor: {
    objects: ['get', 'list', 'putIfAbsent', 'putIfMatch', 'delete'],
    records: ['get', 'put', 'update', 'delete', 'query', 'transact', 'check'],
  },
};
