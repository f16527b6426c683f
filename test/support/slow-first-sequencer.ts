import { BaseSequencer, type TestSpecification } from 'vitest/node'

/*
 * The files that run longest (a server process killed and started again, a real SMSC, a
 * paced or windowed broadcast, several nodes) start first, so that a run does not end with
 * every worker idle but the one still in one of them. Vitest orders by the last run's
 * durations when it has them and by file size when it does not, as on a fresh clone; this
 * keeps its order within each group.
 */
const LONG_RUNNING = /(crash|campaigns-|smpp|receipt-matching|cluster|nodes|restart|stats)[^/]*\.test\.ts$/

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const long = sorted.filter((file) => LONG_RUNNING.test(file.moduleId))
    return [...long, ...sorted.filter((file) => !LONG_RUNNING.test(file.moduleId))]
  }
}
