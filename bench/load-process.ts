/**
 * One load process of a closed or open loop spread over several (bench/devices-load.ts
 * `closedLoop`, `openLoop`): reads its share as JSON on stdin, runs it, and prints what it measured.
 */
import { type LoadShare, runShare } from "./devices-load";

const share = JSON.parse(await Bun.stdin.text()) as LoadShare;
console.log(JSON.stringify(await runShare(share)));
