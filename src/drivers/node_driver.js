process.stdout.write(JSON.stringify({type: "fatal", message: "the node driver is not written yet"}) + "\n"); process.exit(2);
