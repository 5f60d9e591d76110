"""Running campaigns: ReFrame runs of a campaign's checks, schedules, runner profiles, the test
cluster's configuration."""
