# SPDX-License-Identifier: GPL-3.0-or-later
#
# This file is part of Frobnitz.
#
# Frobnitz is free software: you can redistribute it and/or modify it under
# the terms of the GNU General Public License as published by the Free
# Software Foundation, either version 3 of the License, or (at your option)
# any later version.
