import { Api, ApiError, type Principal } from '../api.js';
import { field, h } from '../dom.js';
import { describeError } from './context.js';

/**
 * Sign in with an API key. The key is checked with GET /v1/whoami; a refused key is told
 * plainly, and nothing of it is kept.
 */
export const signInView = (
  onSignedIn: (api: Api, who: Principal, key: string) => void,
): HTMLElement => {
  const input = h('input', {
    type: 'password',
    name: 'key',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const error = h('p', { class: 'error', role: 'alert' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h(
    'form',
    {
      class: 'sign-in',
      'aria-labelledby': 'sign-in-title',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        submit.disabled = true;
        const key = input.value.trim();
        const api = new Api(key);
        try {
          const who = await api.whoami();
          input.value = '';
          onSignedIn(api, who, key);
        } catch (err) {
          error.textContent =
            err instanceof ApiError && err.status === 401
              ? 'That key was refused (unknown, revoked or mistyped). Check it and try again.'
              : `Could not sign in: ${describeError(err)}`;
          input.focus();
          input.select();
        } finally {
          submit.disabled = false;
        }
      },
    },
    h('h2', { id: 'sign-in-title' }, 'Sign in'),
    h(
      'p',
      {},
      'Use an API key (hk_…). The console shows what its tenant and scopes allow. The key stays in this tab only (sessionStorage) and is never sent anywhere but this API.',
    ),
    field('API key', input),
    error,
    submit,
  );
  queueMicrotask(() => input.focus());
  return form;
};
