import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: [
    "./src/db/schema.ts",
    "./src/db/schemaResults.ts",
    "./src/db/schemaRecords.ts",
    "./src/db/schemaVersions.ts",
    "./src/db/schemaFeed.ts",
  ],
  out: "./drizzle",
  schemaFilter: ["straggler"],
  migrations: { schema: "straggler", table: "__drizzle_migrations" },
});
