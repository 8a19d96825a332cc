// A tiny harness for the E2B SDK scripts: check(name, fn) runs fn and
// prints "ok NAME" or "FAIL NAME: why"; done() exits 1 if any failed.
let failed = 0
export async function check(name, fn) {
  try {
    await fn()
    console.log(`ok ${name}`)
  } catch (e) {
    failed++
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`)
  }
}
export function eq(a, b, what = '') {
  const sa = JSON.stringify(a), sb = JSON.stringify(b)
  if (sa !== sb) throw new Error(`${what} expected ${sb}, got ${sa}`)
}
export function ok(v, what = 'assertion') {
  if (!v) throw new Error(`${what} failed`)
}
export async function throwsA(cls, fn, what = '') {
  try {
    await fn()
  } catch (e) {
    if (e instanceof cls) return e
    throw new Error(`${what} expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`)
  }
  throw new Error(`${what} expected ${cls.name}, nothing was thrown`)
}
export function done() {
  process.exit(failed ? 1 : 0)
}
