/**
 * The inputs' states as the checkpoint stores them (`CheckpointInput`, ISO 8601
 * instants) and as the watermark rules compute them (`InputState`, epoch µs).
 */
import { formatInstant, isoToUs } from "../../../core/instants.js";
import type { InputState } from "../../../core/watermark.js";
import type { CheckpointInput } from "../../../core/model.js";

const us = (v: string | null): bigint | null => (v === null ? null : isoToUs(v));
const iso = (v: bigint | null): string | null => (v === null ? null : formatInstant(v));

/** Checkpoint inputs → the watermark rules' states. */
export function inputStates(inputs: readonly CheckpointInput[]): InputState[] {
  return inputs.map((i) => ({
    input: i.input,
    maxEventUs: us(i.maxEventTime),
    watermarkUs: us(i.watermark),
    lastIngestionUs: us(i.lastIngestionTime),
  }));
}

/** The watermark rules' states → checkpoint inputs. */
export function checkpointInputs(states: readonly InputState[]): CheckpointInput[] {
  return states.map((s) => ({
    input: s.input,
    maxEventTime: iso(s.maxEventUs),
    watermark: iso(s.watermarkUs),
    lastIngestionTime: iso(s.lastIngestionUs),
  }));
}
