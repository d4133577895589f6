import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import { InvalidInputError } from '../../shared/domain/errors.js';
import { genesisHash, sealBatch } from '../../shared/domain/event.js';

/**
 * Guards the serializer behind every ledger hash. `canonicalize` is a dependency whose major
 * version we choose for its declared Node engines (see test/unit/engines.test.ts); any version
 * must give these bytes, or hashes already stored would stop verifying.
 */

/** RFC 8785, section 3.2.2: the sample input and its canonical form. */
const RFC_3_2_2_INPUT = String.raw`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`;
const RFC_3_2_2_OUTPUT = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;

/** RFC 8785, section 3.2.3: property sorting by UTF-16 code units. */
const RFC_3_2_3_INPUT = String.raw`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`;
const RFC_3_2_3_OUTPUT =
  '{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
  '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
  '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}';

/** RFC 8785, appendix B: IEEE 754 doubles (as hex) and their JCS text. */
const RFC_APPENDIX_B: Array<[string, string]> = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'],
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'],
];

const double = (hex: string) => Buffer.from(hex, 'hex').readDoubleBE(0);

/** A direct reading of RFC 8785 for JSON data: ES number/string serialization, sorted keys. */
const reference = (value: JsonValue): string => {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${reference(value[key] as JsonValue)}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
};

describe('RFC 8785 canonical JSON (the bytes every ledger hash covers)', () => {
  it('gives the RFC sample its canonical form', () => {
    expect(canonicalJson(JSON.parse(RFC_3_2_2_INPUT))).toBe(RFC_3_2_2_OUTPUT);
  });

  it('sorts properties by UTF-16 code units', () => {
    expect(canonicalJson(JSON.parse(RFC_3_2_3_INPUT))).toBe(RFC_3_2_3_OUTPUT);
  });

  it('formats the numbers of appendix B', () => {
    for (const [hex, text] of RFC_APPENDIX_B) expect(canonicalJson(double(hex)), hex).toBe(text);
    expect(() => canonicalJson(double('7fffffffffffffff'))).toThrow(InvalidInputError);
    expect(() => canonicalJson(double('7ff0000000000000'))).toThrow(InvalidInputError);
  });

  it('refuses lone surrogates instead of hashing an ambiguous encoding', () => {
    expect(() => canonicalJson({ s: '\ud800' })).toThrow(InvalidInputError);
    expect(() => canonicalJson({ '\udc00': 1 })).toThrow(InvalidInputError);
  });

  it('agrees with a direct reading of the RFC on arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 6 }), (value) => {
        expect(canonicalJson(value as JsonValue)).toBe(reference(value as JsonValue));
      }),
      { numRuns: 300, seed: 8785 },
    );
  });

  it('keeps the hash of a known event (test vector)', () => {
    const [event] = sealBatch(0, genesisHash('acme', 'run-1'), 1_700_000_000_000, [
      { type: 'observation', payload: JSON.parse(RFC_3_2_2_INPUT) },
    ]);
    expect(event?.hash).toBe('9c7fdfe602239a31ed0e347a9f44c1c383aefccb92ca4bb7a5510dc655b80b51');
  });
});
