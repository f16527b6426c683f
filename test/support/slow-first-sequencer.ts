import { BaseSequencer, type TestSpecification } from 'vitest/node'

/*
 * The files that run longest (a server process killed and started again, a real SMSC, a
 * paced or windowed broadcast, several nodes) start first, so that a run does not end with
 * every worker idle but the one still in one of them. Vitest orders by the last run's
 * durations when it has them and by file size when it does not, as on a fresh clone; this
 * keeps its order within each group.
 *
 * The files that bound a hand-over's time on the wall clock go last: by then the
 * long-running files (each with server processes of its own) are over, and the cores are
 * shared with the short files still running on the other workers.
 */
const LONG_RUNNING = /(crash|campaigns-|smpp|receipt-matching|cluster|nodes|restart|stats)[^/]*\.test\.ts$/
const TIMED = /\/(dispatch-fairness|campaigns-pacing)\.test\.ts$/

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const timed = sorted.filter((file) => TIMED.test(file.moduleId))
    const rest = sorted.filter((file) => !TIMED.test(file.moduleId))
    const long = rest.filter((file) => LONG_RUNNING.test(file.moduleId))
    return [...long, ...rest.filter((file) => !LONG_RUNNING.test(file.moduleId)), ...timed]
  }
}
