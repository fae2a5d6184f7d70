/** An attempt found that another attempt took its run over: it stops without ending the run. */
export class RunSuperseded extends Error {}

/** An attempt stopped because its run's cancel was asked for. */
export class RunCancelled extends Error {}
