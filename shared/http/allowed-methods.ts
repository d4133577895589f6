import { TrieRouter } from 'hono/router/trie-router';

/** What Hono keeps of a registered route (`app.routes`). */
export interface RegisteredRoute {
  method: string;
  path: string;
}

/**
 * The methods a path is served with, derived from the app's registered routes, for the 405
 * answer's `Allow` header. Middleware (method `ALL`) is not a route. HEAD is listed with GET,
 * since Hono answers HEAD from the GET handler.
 *
 * The routes are read on the first call, when the app is complete: routes added after that
 * are not seen (the app registers everything before it serves).
 */
export const allowedMethodsOf = (
  routes: () => readonly RegisteredRoute[],
): ((path: string) => string[]) => {
  let router: TrieRouter<string> | undefined;
  const build = () => {
    const trie = new TrieRouter<string>();
    // Every route goes in under ALL, carrying its method: one match then yields the methods
    // of every pattern the path fits.
    for (const r of routes()) if (r.method !== 'ALL') trie.add('ALL', r.path, r.method);
    return trie;
  };
  return (path) => {
    router ??= build();
    const [matches] = router.match('GET', path);
    const methods = new Set(matches.map(([method]) => method as string));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
};
