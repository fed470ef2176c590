/** A batch's progress (`straggler.batch_progress`; written by the batch's last statement, src/db/sql/stream/closeBatch.ts). */
import type { InputsAdvance } from "../../../core/watermark.js";
import { checkpointInputs } from "./checkpointInputs.js";
import type { BatchProgress, InputProgress, TriggerKind } from "../../../core/model.js";

export type { BatchProgress, InputProgress, TriggerKind };

/** The inputs of a batch's progress, from `advanceInputs`. */
export function inputProgress(a: InputsAdvance): InputProgress[] {
  return checkpointInputs(a.inputs).map((i) => ({ ...i, idle: a.idle.includes(i.input) }));
}
