import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { convertToAttr, marshall } from '@aws-sdk/util-dynamodb';
import type {
  Condition,
  Item,
  ItemKey,
  JsonValue,
  TransactOp,
  UpdateSpec,
} from '../../ports/record-store.js';

/**
 * Builds DynamoDB request parts from the RecordStore's items, conditions and updates. Every
 * attribute name and value goes through a placeholder (`#n0`, `:v0`): names are never
 * interpolated, so reserved words and odd names cannot change an expression's meaning.
 */

const COMPARATORS = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

/** An attribute no valid item carries (ATTR_NAME_PATTERN starts with a letter). */
const NO_SUCH_ATTR = '_hefesto_none';

export class ExpressionScope {
  private readonly names = new Map<string, string>();
  private readonly values: Record<string, AttributeValue> = {};
  private valueCount = 0;

  name(attr: string): string {
    let id = this.names.get(attr);
    if (id === undefined) {
      id = `#n${this.names.size}`;
      this.names.set(attr, id);
    }
    return id;
  }

  value(value: JsonValue): string {
    const id = `:v${this.valueCount++}`;
    this.values[id] = convertToAttr(value, { removeUndefinedValues: true });
    return id;
  }

  /** The placeholder maps for a request; DynamoDB refuses empty ones, so they are left out. */
  params(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, AttributeValue>;
  } {
    const names = Object.fromEntries([...this.names].map(([attr, id]) => [id, attr]));
    return {
      ...(this.names.size > 0 && { ExpressionAttributeNames: names }),
      ...(this.valueCount > 0 && { ExpressionAttributeValues: this.values }),
    };
  }
}

const compileCondition = (scope: ExpressionScope, c: Condition): string => {
  switch (c.op) {
    case 'exists':
      return `attribute_exists(${scope.name('pk')})`;
    case 'notExists':
      return `attribute_not_exists(${scope.name('pk')})`;
    case 'attrNotExists':
      return `attribute_not_exists(${scope.name(c.attr)})`;
    case 'any':
      return c.conditions.length === 0
        ? `(attribute_exists(${scope.name('pk')}) AND attribute_not_exists(${scope.name('pk')}))`
        : `(${c.conditions.map((inner) => compileCondition(scope, inner)).join(' OR ')})`;
    default: {
      const attr = scope.name(c.attr);
      // DynamoDB refuses a BOOL operand to <, <=, >, >= (ValidationException); the port
      // defines such a comparison as false.
      if (typeof c.value === 'boolean' && c.op !== 'eq' && c.op !== 'ne') {
        return `(attribute_exists(${attr}) AND attribute_not_exists(${attr}))`;
      }
      // `<>` alone holds for a missing attribute; the port requires the attribute to exist.
      return `(attribute_exists(${attr}) AND ${attr} ${COMPARATORS[c.op]} ${scope.value(c.value)})`;
    }
  }
};

/** All conditions must hold; undefined when there are none. */
export const conditionExpression = (
  scope: ExpressionScope,
  conditions: Condition[] = [],
): string | undefined =>
  conditions.length === 0
    ? undefined
    : conditions.map((c) => compileCondition(scope, c)).join(' AND ');

/**
 * SET and REMOVE clauses. An attribute both set and removed ends removed, as in
 * `applyUpdate`. An empty update removes an attribute no item has: TransactWriteItems
 * needs an expression, and the item must still be created when absent.
 */
export const updateExpression = (scope: ExpressionScope, update: UpdateSpec): string => {
  const remove = [...new Set(update.remove ?? [])];
  const sets = Object.entries(update.set ?? {})
    .filter(([attr]) => !remove.includes(attr))
    .map(([attr, value]) => `${scope.name(attr)} = ${scope.value(value)}`);
  const clauses = [
    ...(sets.length > 0 ? [`SET ${sets.join(', ')}`] : []),
    ...(remove.length > 0 ? [`REMOVE ${remove.map((a) => scope.name(a)).join(', ')}`] : []),
  ];
  return clauses.length > 0 ? clauses.join(' ') : `REMOVE ${scope.name(NO_SUCH_ATTR)}`;
};

/** The key attributes only, even when given a whole item. */
export const keyAttrs = (key: ItemKey): Record<string, AttributeValue> =>
  marshall({ pk: key.pk, sk: key.sk });

export const toAttrs = (item: Item): Record<string, AttributeValue> =>
  marshall(item, { removeUndefinedValues: true });

/** One operation of a TransactWriteItems request; a failed condition returns the item. */
export const transactWriteItem = (table: string, op: TransactOp): TransactWriteItem => {
  const scope = new ExpressionScope();
  const common = { TableName: table, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const };
  switch (op.kind) {
    case 'put': {
      const ConditionExpression = conditionExpression(scope, op.conditions);
      return { Put: { ...common, Item: toAttrs(op.item), ConditionExpression, ...scope.params() } };
    }
    case 'update': {
      const UpdateExpression = updateExpression(scope, op.update);
      const ConditionExpression = conditionExpression(scope, op.conditions);
      const Key = keyAttrs(op.key);
      return {
        Update: { ...common, Key, UpdateExpression, ConditionExpression, ...scope.params() },
      };
    }
    case 'delete': {
      const ConditionExpression = conditionExpression(scope, op.conditions);
      return {
        Delete: { ...common, Key: keyAttrs(op.key), ConditionExpression, ...scope.params() },
      };
    }
    case 'check': {
      // A check needs an expression; with no conditions it holds for any item or none.
      const ConditionExpression =
        conditionExpression(scope, op.conditions) ??
        `attribute_exists(${scope.name('pk')}) OR attribute_not_exists(${scope.name('pk')})`;
      const Key = keyAttrs(op.key);
      return { ConditionCheck: { ...common, Key, ConditionExpression, ...scope.params() } };
    }
  }
};
