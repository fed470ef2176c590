-- Alert states (src/observe/alerts.ts): one row per pipeline and alert, written when
-- the state changes, so every process and every restart reads the same state.
CREATE TABLE straggler.alert_states (
  pipeline text NOT NULL,
  alert text NOT NULL,
  state text NOT NULL CHECK (state IN ('ok', 'firing')),
  since timestamptz NOT NULL,
  value double precision,
  PRIMARY KEY (pipeline, alert)
);
