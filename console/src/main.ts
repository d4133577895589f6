import './style.css';
import { Api, type Principal, session } from './api.js';
import { fill, h } from './dom.js';
import { runView } from './views/run.js';
import { runsView } from './views/runs.js';
import { signInView } from './views/sign-in.js';
import { streamView, type Tab } from './views/stream.js';
import { streamsView } from './views/streams.js';

/**
 * The console's shell: sign-in, then a hash router (#/streams, #/s/{id}[/{tab}][?seq=N],
 * #/runs, #/r/{streamId}).
 * Hash routes keep the server to one HTML entry and never put anything secret in a path the
 * server sees.
 */

const app = document.getElementById('app') as HTMLElement;
let current: { api: Api; who: Principal } | undefined;

const header = (who: Principal) =>
  h(
    'header',
    { class: 'top' },
    h('h1', {}, h('a', { href: '#/streams' }, 'Hefesto console')),
    h('p', { class: 'who' }, `tenant ${who.tenant} · ${who.scopes.join(', ')}`),
    h(
      'nav',
      { class: 'top-nav', 'aria-label': 'Console' },
      h('a', { href: '#/runs' }, 'Runs'),
      h('a', { href: '#/streams' }, 'Streams'),
    ),
    h('a', { href: '/docs', class: 'docs-link' }, 'API docs'),
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          session.clear();
          current = undefined;
          location.hash = '';
          route();
        },
      },
      'Sign out',
    ),
  );

const route = () => {
  if (!current) {
    fill(
      app,
      h('header', { class: 'top' }, h('h1', {}, 'Hefesto console')),
      h(
        'main',
        {},
        signInView((api, who, key) => {
          session.save(key);
          current = { api, who };
          if (!location.hash.startsWith('#/s/')) location.hash = '#/streams';
          route();
        }),
      ),
    );
    return;
  }
  const [path = '', query = ''] = location.hash.slice(1).split('?');
  const params = new URLSearchParams(query);
  const match = /^\/s\/([^/]+)(?:\/(state|effects|trust|charts))?$/.exec(path);
  const run = /^\/r\/([^/]+)$/.exec(path);
  const main = h('main', {});
  if (run?.[1]) {
    const id = decodeURIComponent(run[1]);
    main.append(runView(current.api, id));
    document.title = `${id} · Runs · Hefesto console`;
  } else if (path === '/runs') {
    main.append(runsView(current.api));
    document.title = 'Runs · Hefesto console';
  } else if (match?.[1]) {
    const seq = Number(params.get('seq'));
    const id = decodeURIComponent(match[1]);
    main.append(
      streamView(
        current.api,
        current.who,
        id,
        (match[2] as Tab | undefined) ?? 'timeline',
        Number.isInteger(seq) && seq > 0 ? seq : undefined,
      ),
    );
    document.title = `${id} · Hefesto console`;
  } else {
    main.append(streamsView(current.api, params.get('prefix') ?? ''));
    document.title = 'Streams · Hefesto console';
  }
  fill(app, header(current.who), main);
  main.querySelector('h2')?.setAttribute('tabindex', '-1');
  (main.querySelector('h2') as HTMLElement | null)?.focus({ preventScroll: true });
};

window.addEventListener('hashchange', route);

const start = async () => {
  const key = session.load();
  if (key) {
    const api = new Api(key);
    try {
      current = { api, who: await api.whoami() };
    } catch {
      session.clear();
    }
  }
  route();
};
void start();
