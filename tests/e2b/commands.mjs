// commands.* through the unmodified e2b SDK.
import { Sandbox, CommandExitError, TimeoutError, NotFoundError } from 'e2b'
import { check, eq, ok, throwsA, done } from './lib.mjs'

const sbx = await Sandbox.create({ envs: { SANDBOX_WIDE: 'yes' } })

await check('run in the foreground', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2')
  eq([r.exitCode, r.stdout, r.stderr], [0, 'out\n', 'err\n'])
})
await check('a failing command raises CommandExitError', async () => {
  const e = await throwsA(CommandExitError, () => sbx.commands.run('echo bad >&2; exit 3'))
  eq([e.exitCode, e.stderr], [3, 'bad\n'])
})
await check('onStdout and onStderr stream', async () => {
  const out = [], err = []
  await sbx.commands.run('for i in 1 2 3; do echo o$i; echo e$i >&2; sleep 0.05; done',
    { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) })
  eq(out.join(''), 'o1\no2\no3\n')
  eq(err.join(''), 'e1\ne2\ne3\n')
  ok(out.length >= 2, 'more than one chunk')
})
await check('envs, cwd and user', async () => {
  const r = await sbx.commands.run('echo $FOO $SANDBOX_WIDE; pwd', { envs: { FOO: 'bar' }, cwd: '/tmp' })
  eq(r.stdout, 'bar yes\n/tmp\n')
  eq((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  eq((await sbx.commands.run('id -un')).stdout, 'user\n')
})
await check('stdin: send, then close', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await h.sendStdin('hello ')
  await h.sendStdin('world\n')
  await h.closeStdin()
  const r = await h.wait()
  eq(r.stdout, 'hello world\n')
})
await check('background, list, connect, kill', async () => {
  const h = await sbx.commands.run('echo started; sleep 60', { background: true })
  const seen = await sbx.commands.list()
  ok(seen.some((p) => p.pid === h.pid && p.cmd === '/bin/bash'), 'listed with its config')
  await h.disconnect()
  const c = await sbx.commands.connect(h.pid)
  eq(c.pid, h.pid)
  ok(await sbx.commands.kill(h.pid), 'killed')
  await throwsA(CommandExitError, () => c.wait(), 'a killed command')
  ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid), 'gone from the list')
  eq(await sbx.commands.kill(h.pid), false, 'killing it again')
})
await check('connect to a pid that does not exist: NotFoundError', async () => {
  await throwsA(NotFoundError, () => sbx.commands.connect(999999))
})
await check('timeoutMs kills the command: TimeoutError', async () => {
  const t0 = Date.now()
  await throwsA(TimeoutError, () => sbx.commands.run('sleep 30', { timeoutMs: 700 }))
  ok(Date.now() - t0 < 5000, 'ended near the timeout')
})
await check('a long line of output', async () => {
  const r = await sbx.commands.run("python3 -c \"print('x'*300000)\"")
  eq(r.stdout.length, 300001)
})
await sbx.kill()
done()
