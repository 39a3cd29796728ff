from backfill_orchestrator.cli import main

raise SystemExit(main())
