/**
 * How far V8 lets the old generation grow past the data still live before its next full collection. By default it
 * grows to several times the live data, which is resident memory a command holds for nothing. The flag is not a cap:
 * the limit follows the live data, and the collections come more often.
 */
export const keepHeapNearLiveData = (growingPercent: number): void =>
  process.getBuiltinModule("node:v8").setFlagsFromString(`--heap-growing-percent=${growingPercent}`)
