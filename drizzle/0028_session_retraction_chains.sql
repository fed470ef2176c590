-- Session retractions are bounded (README "Session windows"): a micro-batch that retracts rows of a
-- key into an island prunes the stream's earlier retractions (extended, merged) of that key whose
-- removed row lies inside the island, since the new retraction covers every row of its key inside
-- its replacement. This index serves that probe; the DELETE compacts what earlier versions kept
-- (one retraction per batch that extended a session) by the same rule.
CREATE INDEX "session_retractions_key_start" ON "straggler"."session_retractions" USING btree ("pipeline","group_key","window_start");
--> statement-breakpoint
DELETE FROM "straggler"."session_retractions" x
 WHERE x.reason IN ('extended', 'merged')
   AND EXISTS (SELECT 1 FROM "straggler"."session_retractions" y
                WHERE y.pipeline = x.pipeline AND y.group_key = x.group_key AND y.id > x.id AND y.reason IN ('extended', 'merged')
                  AND x.window_start >= y.replaced_by_start AND x.window_end <= y.replaced_by_end);
