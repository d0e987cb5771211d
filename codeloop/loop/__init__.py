"""The round: ten resumable phases and the launcher that runs them (docs/ARCHITECTURE.md)."""
