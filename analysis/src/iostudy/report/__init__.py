"""The versioned HTML reports and their sections."""
