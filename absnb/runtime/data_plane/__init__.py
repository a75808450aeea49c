"""The data plane: framed TCP channels between the hosts of a job, with credit-based flow
control and a priority lane for barriers that overtake.
"""
