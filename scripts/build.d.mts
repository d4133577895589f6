// Types of scripts/build.mjs (plain JavaScript, so it runs without a TypeScript loader).

/** The repository root this file belongs to. */
export declare const REPO_ROOT: string;
/** The built entries, by output name (dist/node/NAME.mjs), and their sources. */
export declare const ENTRIES: Readonly<Record<'server' | 'cli' | 'compact', string>>;
/** dist/node under `root` (default: this repository). */
export declare const outDir: (root?: string) => string;
/** Why dist/node under `root` needs a build, or undefined when it is up to date. */
export declare const staleReason: (root?: string) => string | undefined;
/** Builds dist/node under `root`; resolves with the names of the files written. */
export declare const build: (root?: string) => Promise<string[]>;
/** Builds dist/node under `root` when stale, saying so on stderr; resolves with whether it did. */
export declare const ensureBuilt: (root?: string) => Promise<boolean>;
/** How the server's JavaScript is bundled (esbuild options but entries, outdir and externals). */
export declare const NODE_BUNDLE: Omit<
  import('esbuild').BuildOptions,
  'entryPoints' | 'outdir' | 'external'
> & { metafile: true };
