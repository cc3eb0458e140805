/** Fails fast when the running Bun is not the one package.json pins (`packageManager`). */
import packageJson from "../package.json" with { type: "json" };

const pinned = packageJson.packageManager.replace(/^bun@/, "");
if (Bun.version !== pinned) {
  console.error(
    `cachelab pins Bun ${pinned} (package.json packageManager) but this is Bun ${Bun.version}: ` +
      `install it with \`npm install -g bun@${pinned}\` or \`bash scripts/install-deps.sh\`.`,
  );
  process.exit(2);
}
