// Fixture for the header_rules_catch_violation test (an allowed header).
