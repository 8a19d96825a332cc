// files.* through the unmodified e2b SDK.
import { Sandbox, NotFoundError } from 'e2b'
import { check, eq, ok, throwsA, done } from './lib.mjs'

const sbx = await Sandbox.create()

await check('write one file and read it as text, bytes and a stream', async () => {
  const info = await sbx.files.write('/home/user/one.txt', 'hello file')
  eq([info.name, info.path], ['one.txt', '/home/user/one.txt'])
  eq(await sbx.files.read('/home/user/one.txt'), 'hello file')
  const bytes = await sbx.files.read('one.txt', { format: 'bytes' })
  eq(Buffer.from(bytes).toString(), 'hello file')
  const stream = await sbx.files.read('/home/user/one.txt', { format: 'stream' })
  const chunks = []
  for await (const c of stream) chunks.push(Buffer.from(c))
  eq(Buffer.concat(chunks).toString(), 'hello file')
})
await check('binary content round trip', async () => {
  const data = new Uint8Array(256).map((_, i) => i)
  await sbx.files.write('/home/user/bin.dat', data.buffer)
  const back = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
  eq(Array.from(back), Array.from(data))
})
await check('write many files in one upload', async () => {
  const res = await sbx.files.write([
    { path: '/home/user/many/a.txt', data: 'A' },
    { path: '/home/user/many/b.txt', data: 'B' },
    { path: '/home/user/many/sub/c.txt', data: 'C' },
  ])
  eq(res.length, 3)
  eq(await sbx.files.read('/home/user/many/sub/c.txt'), 'C')
})
await check('write one file and many past the old 16 MiB multipart cap (streamed)', async () => {
  const big = Buffer.alloc(24 << 20)
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i)
  const info = await sbx.files.write('/tmp/big-sdk.bin', big)
  eq([info.name, info.path], ['big-sdk.bin', '/tmp/big-sdk.bin'])
  const back = await sbx.files.read('/tmp/big-sdk.bin', { format: 'bytes' })
  ok(Buffer.compare(Buffer.from(back), big) === 0, 'the same 24 MiB back')
  const res = await sbx.files.write([
    { path: '/tmp/many-big/a.bin', data: big.subarray(0, 12 << 20) },
    { path: '/tmp/many-big/b.bin', data: big.subarray(12 << 20) },
  ])
  eq(res.map((e) => e.path), ['/tmp/many-big/a.bin', '/tmp/many-big/b.bin'])
  const b = await sbx.files.read('/tmp/many-big/b.bin', { format: 'bytes' })
  ok(Buffer.compare(Buffer.from(b), big.subarray(12 << 20)) === 0, 'the second file of many')
})
await check('list, with depth', async () => {
  const names = (await sbx.files.list('/home/user/many')).map((e) => `${e.name}:${e.type}`).sort()
  eq(names, ['a.txt:file', 'b.txt:file', 'sub:dir'])
  const deep = (await sbx.files.list('/home/user/many', { depth: 2 })).map((e) => e.path).sort()
  ok(deep.includes('/home/user/many/sub/c.txt'), 'depth 2 reaches sub/c.txt')
})
await check('exists, getInfo', async () => {
  eq(await sbx.files.exists('/home/user/one.txt'), true)
  eq(await sbx.files.exists('/home/user/nope.txt'), false)
  const i = await sbx.files.getInfo('/home/user/one.txt')
  eq([i.type, i.size, i.permissions], ['file', 10, '-rw-r--r--'])
  ok(i.modifiedTime instanceof Date && i.modifiedTime.getFullYear() >= 2024, 'modifiedTime')
})
await check('makeDir: true, then false when it exists', async () => {
  eq(await sbx.files.makeDir('/home/user/newdir/deep'), true)
  eq(await sbx.files.makeDir('/home/user/newdir/deep'), false)
  eq((await sbx.files.getInfo('/home/user/newdir/deep')).type, 'dir')
})
await check('rename', async () => {
  const e = await sbx.files.rename('/home/user/one.txt', '/home/user/two.txt')
  eq([e.name, e.path], ['two.txt', '/home/user/two.txt'])
  eq(await sbx.files.exists('/home/user/one.txt'), false)
})
await check('remove a file and a tree', async () => {
  await sbx.files.remove('/home/user/two.txt')
  await sbx.files.remove('/home/user/many')
  eq(await sbx.files.exists('/home/user/many'), false)
})
await check('a missing file: NotFoundError on read, getInfo and list', async () => {
  await throwsA(NotFoundError, () => sbx.files.read('/home/user/missing.txt'))
  await throwsA(NotFoundError, () => sbx.files.getInfo('/home/user/missing.txt'))
  await throwsA(NotFoundError, () => sbx.files.list('/home/user/missing-dir'))
})
await check('a file written by a command is read back', async () => {
  await sbx.commands.run('echo from-cmd > /home/user/cmd.txt')
  eq(await sbx.files.read('/home/user/cmd.txt'), 'from-cmd\n')
})
await check('a 40 MiB file made by a command is read whole', async () => {
  await sbx.commands.run('head -c 41943040 /dev/zero | tr "\\0" "z" > /home/user/big.txt')
  const b = await sbx.files.read('/home/user/big.txt', { format: 'bytes' })
  eq(b.length, 41943040)
  ok(b[0] === 122 && b[b.length - 1] === 122, 'the bytes')
})
await check('watchDir sees a write made by commands.run', async () => {
  await sbx.files.makeDir('/home/user/watched')
  const events = []
  const h = await sbx.files.watchDir('/home/user/watched', (ev) => events.push(ev))
  await sbx.commands.run('echo hi > /home/user/watched/new.txt; mv /home/user/watched/new.txt /home/user/watched/moved.txt; rm /home/user/watched/moved.txt')
  for (let i = 0; i < 100 && !events.some((e) => e.type === 'remove'); i++) await new Promise((r) => setTimeout(r, 20))
  await h.stop()
  const seen = events.map((e) => `${e.type}:${e.name}`)
  ok(seen.includes('create:new.txt'), `create (${seen})`)
  ok(seen.includes('write:new.txt'), `write (${seen})`)
  ok(seen.includes('rename:new.txt') && seen.includes('create:moved.txt'), `rename (${seen})`)
  ok(seen.includes('remove:moved.txt'), `remove (${seen})`)
})
await check('watchDir recursive, and a missing directory: NotFoundError', async () => {
  await sbx.files.makeDir('/home/user/tree/sub')
  const events = []
  const h = await sbx.files.watchDir('/home/user/tree', (ev) => events.push(ev), { recursive: true })
  await sbx.files.write('/home/user/tree/sub/deep.txt', 'x')
  for (let i = 0; i < 100 && !events.some((e) => e.name === 'sub/deep.txt'); i++) await new Promise((r) => setTimeout(r, 20))
  await h.stop()
  ok(events.some((e) => e.name === 'sub/deep.txt'), `a nested write (${events.map((e) => e.type + ':' + e.name)})`)
  await throwsA(NotFoundError, () => sbx.files.watchDir('/home/user/no-such-dir', () => {}))
})
await check('write with gzip: true (Content-Encoding: gzip, octet-stream) and read with gzip: true', async () => {
  const info = await sbx.files.write('/home/user/gz.txt', 'hello gzip '.repeat(1000), { gzip: true })
  eq([info.name, info.path], ['gz.txt', '/home/user/gz.txt'])
  eq(await sbx.files.read('/home/user/gz.txt'), 'hello gzip '.repeat(1000))
  const big = Buffer.alloc(8 << 20)
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(((i >> 12) * 2654435761) >>> 0, i)
  const res = await sbx.files.write([{ path: '/tmp/gz/a.bin', data: big }, { path: '/tmp/gz/b.txt', data: 'B' }],
    { gzip: true })
  eq(res.map((e) => e.path), ['/tmp/gz/a.bin', '/tmp/gz/b.txt'])
  const back = await sbx.files.read('/tmp/gz/a.bin', { format: 'bytes', gzip: true })
  ok(Buffer.compare(Buffer.from(back), big) === 0, 'the same 8 MiB back')
  const sum = await sbx.commands.run('sha256sum /tmp/gz/a.bin')
  const { createHash } = await import('node:crypto')
  eq(sum.stdout.split(' ')[0], createHash('sha256').update(big).digest('hex'))
  eq(await sbx.files.read('/tmp/gz/b.txt', { gzip: true }), 'B')
})
await sbx.kill()
done()
