/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SDNOTIFY_H
#define MOAT_SDNOTIFY_H

/*
 * The service manager's notification protocol (sd_notify(3)), without
 * libsystemd: one datagram of "VAR=value" lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or '@' for the abstract namespace).
 * Outside a Type=notify service there is no $NOTIFY_SOCKET and nothing is
 * sent.
 */

/**
 * moat_sd_notify() - send @state ("READY=1\nSTATUS=...") to the service
 * manager.  Return: 1 when sent, 0 when no manager asked for it (no
 * $NOTIFY_SOCKET), -errno when it could not be sent.
 */
int moat_sd_notify(const char *state);

/**
 * moat_sd_watchdog_usec() - the watchdog interval the manager expects
 * "WATCHDOG=1" within ($WATCHDOG_USEC), when it is meant for this
 * process ($WATCHDOG_PID, if set, is ours); 0 when none.
 */
unsigned long long moat_sd_watchdog_usec(void);

#endif /* MOAT_SDNOTIFY_H */
