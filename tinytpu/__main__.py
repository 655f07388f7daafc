from tinytpu.cli import main

raise SystemExit(main())
