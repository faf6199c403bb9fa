// The JMeter shim: what JMeter's script elements find in scope (vars, props, log, prev,
// SampleResult, ctx, sampler, AssertionResult), over onrush's ctx. Each converted element is
// a function `(octx, res, req)` that asks `jmeter(...)` for them.
//
// - `vars` reads and writes the VU's variables (`${name}` in the plan); names are made
//   plan-safe as the importer makes them (`a-b` → `a_b`). `vars["x"]` works too.
// - `props` is a map in this module: shared by the VUs of one worker thread, not by the whole
//   run (JMeter's properties are global to the JVM). Set what every VU needs in a setup step.
// - A failed assertion, `prev.setSuccessful(false)` or `SampleResult.setSuccessful(false)`
//   fails the step (ctx.fail), as JMeter marks the sample failed.
// - Java's String/Number/List methods Groovy code calls (`toInteger()`, `equals()`,
//   `contains()`, `size()`, ...) are added to JavaScript's prototypes when missing: they are
//   shared with the plan's other scripts in the same engine.
import * as crypto from 'onrush/crypto';

const jmProps = new Map();

function jmName(n) {
  let s = String(n).trim().replace(/[^A-Za-z0-9]/g, '_');
  if (s === '' || /^[0-9]/.test(s)) s = 'v_' + s;
  return s;
}

function jmInt(s) {
  const n = parseInt(String(s).trim(), 10);
  if (Number.isNaN(n)) throw new TypeError(`not a number: ${JSON.stringify(String(s))}`);
  return n;
}

function jmBool(s) {
  return String(s).trim().toLowerCase() === 'true';
}

function jmFormat(args) {
  // slf4j's `{}` placeholders, as `log.info("x = {}", x)` writes them.
  let [msg, ...rest] = args;
  msg = String(msg);
  while (rest.length > 0 && msg.includes('{}')) msg = msg.replace('{}', String(rest.shift()));
  return rest.length > 0 ? msg + ' ' + rest.map(String).join(' ') : msg;
}

const log = {
  info: (...a) => console.log(jmFormat(a)),
  warn: (...a) => console.warn(jmFormat(a)),
  error: (...a) => console.error(jmFormat(a)),
  // JMeter logs at INFO by default: debug and trace lines are dropped, as there.
  debug: () => {},
  trace: () => {},
};

function define(proto, name, f) {
  if (!Object.prototype.hasOwnProperty.call(proto, name)) {
    Object.defineProperty(proto, name, { value: f, configurable: true, writable: true });
  }
}
for (const proto of [String.prototype, Number.prototype]) {
  define(proto, 'toInteger', function () { return jmInt(this); });
  define(proto, 'toLong', function () { return jmInt(this); });
  define(proto, 'intValue', function () { return jmInt(this); });
  define(proto, 'toDouble', function () { return Number(this); });
  define(proto, 'toBoolean', function () { return jmBool(this); });
  define(proto, 'equals', function (o) { return o !== null && o !== undefined && this.valueOf() == o.valueOf(); });
}
define(String.prototype, 'equalsIgnoreCase', function (o) { return o !== null && o !== undefined && this.toLowerCase() === String(o).toLowerCase(); });
define(String.prototype, 'contains', function (s) { return this.includes(String(s)); });
define(String.prototype, 'isEmpty', function () { return this.length === 0; });
define(String.prototype, 'size', function () { return this.length; });
define(String.prototype, 'matches', function (r) { return new RegExp(`^(?:${r})$`).test(this); });
define(String.prototype, 'jmReplaceAll', function (r, to) { return this.replace(new RegExp(r, 'g'), String(to).replace(/\$(\d)/g, '$$$1')); });
define(Array.prototype, 'size', function () { return this.length; });
define(Array.prototype, 'get', function (i) { return this[i]; });
define(Array.prototype, 'add', function (x) { this.push(x); return true; });
define(Array.prototype, 'isEmpty', function () { return this.length === 0; });
define(Array.prototype, 'contains', function (x) { return this.includes(x); });

function keyed(target, get, put) {
  // `vars["x"]` and `vars.x` as JMeter's Groovy allows, besides get/put.
  return new Proxy(target, {
    get(t, k) { return typeof k !== 'string' || k in t ? t[k] : get(k); },
    set(t, k, v) { put(k, v); return true; },
  });
}

const props = keyed({
  get: (k, d) => (jmProps.has(String(k)) ? jmProps.get(String(k)) : d === undefined ? null : d),
  put: (k, v) => { const old = jmProps.get(String(k)); jmProps.set(String(k), v); return old === undefined ? null : old; },
  getProperty: (k, d) => props.get(k, d),
  setProperty: (k, v) => props.put(k, v),
  containsKey: (k) => jmProps.has(String(k)),
  remove: (k) => { const old = jmProps.get(String(k)); jmProps.delete(String(k)); return old === undefined ? null : old; },
}, (k) => props.get(k), (k, v) => props.put(k, v));

function jmeter(octx, res, req) {
  const store = octx.vars;
  const get = (n) => {
    const k = jmName(n);
    const v = store[k];
    if (v !== undefined) return v;
    return k in jmPlanVars ? jmPlanVars[k] : null;
  };
  const put = (n, v) => { store[jmName(n)] = v === null || v === undefined ? undefined : String(v); };
  const vars = keyed({
    get, put,
    getObject: (n) => { const v = store[jmName(n)]; return v === undefined ? null : v; },
    putObject: (n, v) => { store[jmName(n)] = v === null ? undefined : v; },
    remove: (n) => { const v = get(n); store[jmName(n)] = undefined; return v; },
    getIteration: () => octx.iteration + 1,
  }, get, put);
  const state = { success: true, message: '', failure: false, failureMessage: '' };
  let data = res ? res.body : '';
  let code = res ? String(res.status) : '';
  const prev = {
    getResponseDataAsString: () => data,
    getResponseCode: () => code,
    getResponseHeaders: () => (res ? Object.entries(res.headers).map(([k, v]) => `${k}: ${v}\n`).join('') : ''),
    isSuccessful: () => state.success,
    setSuccessful: (b) => { state.success = Boolean(b); },
    getURL: () => (res ? res.url : ''),
    getUrlAsString: () => (res ? res.url : ''),
    setResponseData: (d) => { data = String(d); },
    setResponseCode: (c) => { code = String(c); },
    setResponseMessage: (m) => { state.message = String(m); },
    setResponseCodeOK: () => { code = '200'; },
    setResponseOK: () => { code = '200'; state.success = true; },
  };
  const AssertionResult = {
    setFailure: (b) => { state.failure = Boolean(b); },
    setError: (b) => { state.failure = Boolean(b); },
    setFailureMessage: (m) => { state.failureMessage = String(m); },
    isFailure: () => state.failure,
    isError: () => state.failure,
    getFailureMessage: () => state.failureMessage,
  };
  const sampler = req && {
    getUrl: () => req.url,
    getMethod: () => req.method,
    getPath: () => req.url.replace(/^[a-z]+:\/\/[^/]*/i, '').replace(/\?.*$/, ''),
    addArgument: (n, v) => {
      req.url += (req.url.includes('?') ? '&' : '?') + encodeURIComponent(n) + '=' + encodeURIComponent(v);
    },
  };
  const ctx = {
    // JMeter numbers its threads from 0, onrush its VUs from 1.
    getThreadNum: () => octx.vu - 1,
    getVariables: () => vars,
    getPreviousResult: () => prev,
    getProperties: () => props,
  };
  // What JMeter would have marked failed fails the step.
  const done = () => {
    if (state.failure) octx.fail(state.failureMessage || 'a JMeter assertion script failed');
    if (!state.success) octx.fail(state.message || 'a JMeter script marked the sample failed (setSuccessful(false))');
  };
  return { vars, props, log, prev, SampleResult: prev, AssertionResult, sampler, ctx, done };
}
