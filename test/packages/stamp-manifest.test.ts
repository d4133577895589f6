import { describe, expect, it } from 'vitest';
import { stampManifest } from '../../scripts/pack.js';

/** The package.json templates take every version from the root package.json (one place). */
const root = {
  version: '1.2.3',
  engines: { node: '>=20.19' },
  dependencies: { canonicalize: '5.1.0' },
  devDependencies: { '@langchain/langgraph-checkpoint': '1.2.2' },
};

describe('stampManifest', () => {
  it('fills in the root version, the root fields and the root pins', () => {
    const stamped = stampManifest(
      {
        name: '@hefesto/x',
        version: '$version',
        engines: '$root',
        description: 'release $version',
        dependencies: { canonicalize: '$root', '@hefesto/client': '$version' },
        peerDependencies: { '@langchain/langgraph-checkpoint': '^$root' },
      },
      root,
    );
    expect(stamped).toEqual({
      name: '@hefesto/x',
      version: '1.2.3',
      engines: { node: '>=20.19' },
      description: 'release 1.2.3',
      dependencies: { canonicalize: '5.1.0', '@hefesto/client': '1.2.3' },
      peerDependencies: { '@langchain/langgraph-checkpoint': '^1.2.2' },
    });
  });

  it('refuses a dependency the root does not pin', () => {
    expect(() => stampManifest({ dependencies: { 'left-pad': '$root' } }, root)).toThrow(
      'root package.json does not pin left-pad',
    );
  });

  it('refuses a $root field the root does not have', () => {
    expect(() => stampManifest({ license: '$root' }, root)).toThrow(
      'root package.json has no "license"',
    );
  });
});
