// The JavaScript of examples/scripting.yaml (docs/scripting.md): exported functions the plan
// names as hooks. One engine per worker thread runs them for all of its VUs.
import { hmac } from 'onrush/crypto';

// A module's top level runs once per worker when the plan loads; `open('key.txt')` there would
// read a file of the plan's folder once.
const KEY = 'k3y';

// before: the rendered request, changed before it is sent.
export function sign(req, ctx) {
  req.headers['x-signature'] = hmac('sha256', KEY, req.body);
}

// after: the reply; what it sets in ctx.vars, templates read as ${name}.
export function remember(res, ctx) {
  const echo = res.json();
  ctx.vars.length = String(echo.body_length);
}

// A function templates can call: `${signatureOf(text)}`.
export function signatureOf(text) {
  return hmac('sha256', KEY, text);
}
