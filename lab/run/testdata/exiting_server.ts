/** A server that dies at start: the runner must record the cell and go on. */
console.error("refusing to start");
process.exit(3);
