"""How often and how much rank 0 reads of the fleet's store while it collects: the collector's bounds in one place."""

POLL_S = 0.25
READS_PER_POLL = 200  # events read from one host in one poll, at most: a flood waits for the next poll
LOOKAHEAD = 8  # slots looked at past a missing one (someone deleted it) before waiting for the agent
LOOKAHEAD_EVERY_S = 2.0  # at most this often per host: the store serves every host's reads
REFUSAL_CHECK_S = 2.0  # heartbeat silence after which rank 0 looks for a refusal (and for an end)
SCAN_EVERY_S = 30.0  # per host: its next slot and its end looked at directly, whatever its state says
SCANS_PER_POLL = 8  # hosts whose first scan falls in one poll: a thousand hosts' scans spread over the cycle
KEYS_PER_CALL = 512  # agents' states, or new slots of all agents, read in one check and one multi_get
ROWS_PER_WRITE = 500  # rows written in one transaction as a poll reads them: many a write, and none waits long
SLOTS_PER_POLL = 8192  # new slots of all agents read together in one poll, at most; the rest next poll
MAX_PHASES = 16
MAX_SLOTS = 10**9
