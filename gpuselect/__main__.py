from gpuselect.cli import main

raise SystemExit(main())
