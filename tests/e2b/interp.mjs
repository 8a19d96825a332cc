// runCode and contexts through the unmodified @e2b/code-interpreter SDK.
import { Sandbox } from '@e2b/code-interpreter'
import { check, eq, ok, done } from './lib.mjs'

const sbx = await Sandbox.create()

await check('state across calls', async () => {
  await sbx.runCode('x = 41')
  const e = await sbx.runCode('x + 1')
  eq(e.text, '42')
  ok(e.executionCount >= 2, 'execution count')
})
await check('stdout, stderr and callbacks', async () => {
  const out = []
  const e = await sbx.runCode('import sys\nprint("o")\nprint("e", file=sys.stderr)', { onStdout: (m) => out.push(m.line) })
  eq(e.logs.stdout, ['o\n'])
  eq(e.logs.stderr, ['e\n'])
  eq(out, ['o\n'])
})
await check('errors: name, value, traceback', async () => {
  const e = await sbx.runCode('1/0')
  eq([e.error.name, e.error.value], ['ZeroDivisionError', 'division by zero'])
  ok(e.error.traceback.includes('ZeroDivisionError'), 'traceback text')
})
await check('display data: a matplotlib PNG', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  const png = e.results.find((r) => r.png)
  ok(png, 'a png result')
  eq(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG')
  eq(png.isMainResult, false)
})
await check('charts: line, scatter, bar, pie, box and whisker, superchart', async () => {
  const chart = async (code) => {
    const e = await sbx.runCode('import matplotlib.pyplot as plt\n' + code + '\nplt.show()')
    ok(!e.error, JSON.stringify(e.error))
    const r = e.results.find((x) => x.chart)
    ok(r && r.png, 'a result with a chart and its png')
    return r.chart
  }
  let c = await chart("plt.plot([1, 2, 3], [4, 5, 6], label='speed')\nplt.title('Run')\n" +
                      "plt.xlabel('time (s)')\nplt.ylabel('v [m/s]')")
  eq([c.type, c.title, c.x_label, c.y_label, c.x_unit, c.y_unit, c.x_scale], ['line', 'Run', 'time (s)', 'v [m/s]', 's', 'm/s', 'linear'])
  eq(c.elements, [{ label: 'speed', points: [[1, 4], [2, 5], [3, 6]] }])
  ok(c.x_ticks.length === c.x_tick_labels.length && c.x_ticks.length > 1, 'ticks and their labels')
  c = await chart("plt.scatter([1, 2], [3, 4], label='pts')\nplt.yscale('log')")
  eq([c.type, c.y_scale, c.elements], ['scatter', 'log', [{ label: 'pts', points: [[1, 3], [2, 4]] }]])
  c = await chart("plt.bar(['A', 'B', 'C'], [10, 20, 30], label='Sold')\nplt.xlabel('who')")
  eq([c.type, c.x_label], ['bar', 'who'])
  eq(c.elements, [{ label: 'A', value: 10, group: 'Sold' }, { label: 'B', value: 20, group: 'Sold' },
                  { label: 'C', value: 30, group: 'Sold' }])
  c = await chart("plt.barh(['p', 'q'], [3, 5], label='h')\nplt.ylabel('names')")
  eq([c.type, c.x_label, c.elements.map((b) => [b.label, b.value])], ['bar', 'names', [['p', 3], ['q', 5]]],
     'horizontal bars')
  c = await chart("plt.pie([1, 1, 2], labels=['x', 'y', 'z'])\nplt.title('Share')")
  eq([c.type, c.title, c.elements], ['pie', 'Share', [{ label: 'x', angle: 90, radius: 1 },
                                                      { label: 'y', angle: 90, radius: 1 },
                                                      { label: 'z', angle: 180, radius: 1 }]])
  c = await chart("plt.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4]], patch_artist=True)\nplt.xticks([1, 2], ['a', 'b'])")
  eq(c.type, 'box_and_whisker')
  eq(c.elements.map((b) => [b.label, b.min, b.first_quartile, b.median, b.third_quartile, b.max, b.outliers]),
     [['a', 1, 2.25, 3.5, 4.75, 5, [20]], ['b', 2, 2.5, 3, 3.5, 4, []]])
  c = await chart("fig, (l, r) = plt.subplots(1, 2)\nl.plot([1, 2])\nr.pie([1, 3])\nfig.suptitle('Both')")
  eq([c.type, c.title, c.elements.map((x) => x.type)], ['superchart', 'Both', ['line', 'pie']])
  const none = await sbx.runCode('1 + 1')
  eq(none.results[0].chart, undefined, 'no chart on other results')
})
await check('a pandas DataFrame as HTML, the main result', async () => {
  const e = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2]})')
  ok(e.results[0].html.includes('<table'), 'html table')
  eq(e.results[0].isMainResult, true)
  ok(e.text.includes('a'), 'text too')
})
await check('contexts: create, isolated state, list, restart, remove', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python' })
  eq(ctx.language, 'python')
  await sbx.runCode('y = 5', { context: ctx })
  eq((await sbx.runCode('y', { context: ctx })).text, '5')
  eq((await sbx.runCode('y')).error.name, 'NameError', 'the default context is separate')
  ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'listed')
  await sbx.restartCodeContext(ctx)
  eq((await sbx.runCode('y', { context: ctx })).error.name, 'NameError', 'restarted')
  await sbx.removeCodeContext(ctx)
  ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'removed')
})
await check('javascript and bash', async () => {
  eq((await sbx.runCode('2 + 3', { language: 'javascript' })).text, '5')
  eq((await sbx.runCode('echo hi', { language: 'bash' })).logs.stdout.join(''), 'hi\n')
})
await check('envs: set for that execution only, in every language', async () => {
  const envs = { XB_CELL_ENV: 'it is "set" $HOME', HOME: '/cell-home' }
  eq((await sbx.runCode('import os, subprocess\n(os.environ["XB_CELL_ENV"], os.environ["HOME"], ' +
                        'subprocess.run(["sh", "-c", "echo $XB_CELL_ENV"], capture_output=True, text=True).stdout)',
                        { envs })).text, `('it is "set" $HOME', '/cell-home', 'it is "set" $HOME\\n')`)
  eq((await sbx.runCode('import os\n(os.environ.get("XB_CELL_ENV"), os.environ["HOME"])')).text,
     "(None, '/home/user')", 'python: put back after')
  eq((await sbx.runCode('process.env.XB_CELL_ENV', { language: 'javascript', envs })).text, "'it is \"set\" $HOME'")
  eq((await sbx.runCode('String(process.env.XB_CELL_ENV)', { language: 'javascript' })).text, "'undefined'")
  eq((await sbx.runCode('echo "$XB_CELL_ENV"; false', { language: 'bash', envs })).logs.stdout.join(''),
     'it is "set" $HOME\n')
  eq((await sbx.runCode('echo "${XB_CELL_ENV-unset} $HOME"', { language: 'bash' })).logs.stdout.join(''),
     'unset /home/user\n', 'bash: put back after')
  let r = null
  try { r = await sbx.runCode('1', { language: 'r' }) } catch (e) { r = null }
  if (r && !r.error) {   // R: where the IRkernel is installed
    eq((await sbx.runCode('Sys.getenv("XB_CELL_ENV")', { language: 'r', envs })).results[0].text,
       '[1] "it is \\"set\\" $HOME"')
    eq((await sbx.runCode('Sys.getenv("XB_CELL_ENV", unset = "unset")', { language: 'r' })).results[0].text,
       '[1] "unset"', 'r: put back after')
  }
})
await check('a timeout interrupts the cell, and the kernel lives on', async () => {
  let threw = false
  try {
    await sbx.runCode('import time\ntime.sleep(30)', { timeoutMs: 1000 })
  } catch (e) {
    threw = e.name === 'TimeoutError' || e.constructor.name === 'TimeoutError'
  }
  ok(threw, 'TimeoutError')
  const t0 = Date.now()
  eq((await sbx.runCode('x')).text, '41', 'state kept')
  ok(Date.now() - t0 < 10_000, 'the interrupted cell did not hold the kernel')
})
await sbx.kill()
done()
