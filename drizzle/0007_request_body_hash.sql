ALTER TABLE "straggler"."landed_sources" ADD COLUMN "request_sha256" text;--> statement-breakpoint
ALTER TABLE "straggler"."landed_sources" ADD COLUMN "by_reason" jsonb;--> statement-breakpoint
COMMENT ON COLUMN "straggler"."landed_sources"."request_sha256" IS 'HTTP landings: SHA-256 (hex) of the request body after Content-Encoding is removed; a reused Idempotency-Key must come with the same body';--> statement-breakpoint
COMMENT ON COLUMN "straggler"."landed_sources"."by_reason" IS 'quarantined rows of the landing by reason, as first answered (a retry with the same Idempotency-Key gets the same answer)'
