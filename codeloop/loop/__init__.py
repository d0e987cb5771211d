"""The round: ten resumable phases and the launcher that runs them (see DESIGN.md)."""
